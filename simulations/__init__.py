"""A real pretrained LLM (SmolLM2-135M-Instruct) in numpy: prefill, decode with a KV cache, traces.

Public API: simulations.loader.load_model, simulations.model (prefill, decode_step,
forward_without_cache, KVCache, Observer), simulations.cost (FLOPs and bytes of a pass),
simulations.generate.generate (the generation loop), simulations.trace.record,
simulations.machine.machine_info.
Run `python -m simulations --help` for the command line.
"""
