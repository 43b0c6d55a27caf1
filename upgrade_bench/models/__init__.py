"""What a model is and what it costs.

architecture   a model family read from its HF config: per layer a mixer (full, sliding-window or
               linear attention) and an MLP (dense or MoE); FAMILIES is where a family is added
flops          the guide's FLOP convention per layer type, pure functions: dense, attention, window
               band, linear mixers, MFU/HFU, isolated kernels
model          model configs and presets, weights, building the HF model, Liger, fast-kernel bindings
"""
