"""The types the ViT's data modules share: the images a run trains on and the error of a data set that cannot be had.

Their own module, below :mod:`.data` (CIFAR-10, the digits, the manifest) and :mod:`.fashion` (Fashion-MNIST), so that
each of those imports them at the top and neither imports the other to get them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


class DataUnavailableError(RuntimeError):
    """A data set could not be loaded; ``problem`` says it in a few words (e.g. "CIFAR-10 unavailable").

    Without a stand-in (the paper-scale config) it stops the run; the message says where to put the files.
    """

    def __init__(self, message: str, problem: str) -> None:
        super().__init__(message)
        self.problem = problem


@dataclass(frozen=True)
class ImageData:
    """Train and test images as uint8 (N, 3, 32, 32) tensors with int64 labels; normalisation from the train set."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    name: str
    classes: list[str]
    note: str = ""  # why a stand-in was taken (empty: the configured data set), written on the figures
    digest: str = ""  # the manifest's hash of the data set's name and files

    @property
    def identity(self) -> str:
        """Data set, files and sizes: a checkpoint of a run on one data set never resumes on another."""
        return f"{self.name}:{self.digest}:{len(self.x_train)}:{len(self.x_test)}"

    @property
    def mean(self) -> torch.Tensor:
        return self.x_train.float().mean(dim=(0, 2, 3)) / 255.0

    @property
    def std(self) -> torch.Tensor:
        return self.x_train.float().std(dim=(0, 2, 3)) / 255.0
