"""Functions the SDK tests ship: defined at the top of a module so their source can be read,
some self-contained and some not, each for the reason its name says."""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable

LEARNING_RATE = 0.1


def helper() -> int:
    return 1


def self_contained(epochs: int, lr: float = 0.01) -> dict:
    import math
    import statistics as stats

    values = [math.sqrt(i) for i in range(epochs)]

    def inner() -> float:
        return stats.fmean(values) if values else 0.0

    class Box:
        size = len(values)

        def twice(self) -> int:
            return self.size * 2

    global RESULT  # assigned here, so it is defined in the script's module
    RESULT = {"epochs": epochs, "lr": lr, "mean": inner(), "twice": Box().twice()}
    print(RESULT)
    return RESULT


def no_arguments() -> str:
    return "ran"


def uses_module_global() -> float:
    return LEARNING_RATE * 2


def uses_module_import() -> str:
    return os.getcwd()


def uses_module_function() -> int:
    return helper()


def uses_imported_class() -> OrderedDict:
    return OrderedDict()


def default_from_global(lr: float = LEARNING_RATE) -> float:
    return lr


def uses_undefined() -> None:
    print(not_defined_anywhere)  # noqa: F821


def make_closure(value: int) -> Callable[[], int]:
    def closure() -> int:
        return value

    return closure


async def coroutine_function() -> None:
    pass


class Holder:
    def method(self) -> None:
        pass
