"""Errors the command line shows as a one-line message instead of a traceback."""


class SimulationError(Exception):
    """A problem the user can fix (missing model, bad file, bad prompt); the message says how."""


class ModelUnavailableError(SimulationError):
    """No cached model and no way to download it."""


class ModelFileError(SimulationError):
    """A GGUF file that is corrupt, of an unsupported architecture, or missing tensors."""


class PromptError(SimulationError):
    """An empty prompt, or one longer than the model's context."""


class WeightFormatError(SimulationError, ValueError):
    """A weight format that is not supported, or a matrix a format cannot hold (quantized.py)."""
