"""What a GPU is and what this node has.

gpus                the GPU table (peaks per dtype, HBM, bandwidth, link, published MAMF), each row
                    citing its datasheet, and the lookup by name: where a GPU is added
devices/            the GPUs visible here, NVIDIA (NVML) or AMD (amdsmi), without torch
fingerprint         the software stack; the device as torch sees it
telemetry           NVML sampling: clocks, power, temperature, throttle reasons, energy
formats             what the silicon must have for each matmul number format (compute capability floors)
precisions          the training precisions (PRECISION): recipe, capability item, ceiling, what converts
"""
