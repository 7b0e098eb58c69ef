"""The Python API: the protocol over any callable (`measure`), a model measured as a profile
job measures it (`profile`), and the energy of any block of code (`Monitor`), each with the
meter's honesty (docs/api.md). `import joulebench` reaches these lazily, by the package's
`__getattr__` (`joulebench.measure`, `joulebench.profile`, `joulebench.Monitor`)."""

from joulebench.api.measurement import Measurement
from joulebench.api.monitor import Monitor, ShortWindowWarning, Window
from joulebench.api.run import MeasurementError, measure, profile

__all__ = [
    "Measurement",
    "MeasurementError",
    "Monitor",
    "ShortWindowWarning",
    "Window",
    "measure",
    "profile",
]
