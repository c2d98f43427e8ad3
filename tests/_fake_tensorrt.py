"""Pieces shared by the fake TensorRT modules of test_engine_fake.py and test_runtime_fake.py.

As in the TensorRT Python bindings (8.2 / 10.x / 11.x): ILogger.Severity and a logger
base class that subclasses construct without arguments.
"""
import enum


class Severity(enum.IntEnum):
    INTERNAL_ERROR = 0
    ERROR = 1
    WARNING = 2
    INFO = 3
    VERBOSE = 4


class ILogger:
    Severity = Severity

    def __init__(self):
        pass
