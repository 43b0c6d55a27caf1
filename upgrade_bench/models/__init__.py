"""What a model is and what it costs.

architecture   a model family read from its HF config: per layer a mixer (full, sliding-window or
               linear attention) and an MLP (dense or MoE); FAMILIES is where a family is added
flops          the guide's FLOP convention per layer type, pure functions: dense, attention, window
               band, linear mixers, MFU/HFU, isolated kernels
peak_memory    the training state's bytes and a point's peak memory, estimated: the plans' fit and the
               forecast's memory where the baseline ran out
model          model configs and presets, weights, building the HF model, Liger, fast-kernel bindings
"""
