"""One attempt of the ViT soak run (tests/test_soak.py): what scripts/vit_train.py does, with marks to kill it by.

``python vit_soak_driver.py CONFIG.json OUT_DIR [WHAT:K]``: trains the ViT of the config's ``vit`` block (resuming
from ``OUT_DIR/checkpoint.pt``) and writes its metrics table, sidecar, maps and snapshots into ``OUT_DIR``. With
``WHAT:K`` (``epoch`` or ``save``) it prints ``PAUSED <what>`` and sleeps 30 s at the K-th such moment of this
attempt: after the first batch of an epoch (mid-epoch: model, optimiser and RNG have moved on since the checkpoint),
or in the middle of a write of the checkpoint or of an epoch's snapshot (half of its bytes written, not yet renamed);
the test then interrupts it there.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path

import torch

from maxmargin.experiments.vit import VitSettings, load_image_data, train_vit
from maxmargin.experiments.vit import training as training_module
from maxmargin.experiments.vit.results import save_result


class Pause:
    """Sleep at the ``at``-th moment of its kind, saying so on stdout."""

    def __init__(self, what: str, at: int) -> None:
        self.what, self.at, self.seen = what, at, 0

    def __call__(self) -> None:
        self.seen += 1
        if self.seen == self.at:
            print(f"PAUSED {self.what}", flush=True)
            time.sleep(30)


def pause_mid_epoch(pause: Pause) -> None:
    update = training_module.Progress.update

    def first_batch_done(self: training_module.Progress, done: int, detail: str = "") -> None:
        update(self, done, detail)
        if done == 1 and self.what.startswith("epoch"):
            pause()

    training_module.Progress.update = first_batch_done


def pause_mid_write(pause: Pause) -> None:
    save = torch.save

    def half_written(state: object, path: str) -> None:
        save(state, path)
        data = Path(path).read_bytes()
        Path(path).write_bytes(data[: len(data) // 2])
        pause()
        Path(path).write_bytes(data)

    torch.save = half_written


def main(config_path: str, out: str, paused: str = "") -> None:
    config = json.loads(Path(config_path).read_text())
    settings = VitSettings.from_config(config["vit"])
    data = load_image_data(settings.data, settings.train.seed)
    if paused:
        what, at = paused.split(":")
        {"epoch": pause_mid_epoch, "save": pause_mid_write}[what](Pause(what, int(at)))
    out_dir = Path(out)
    result = train_vit(settings, data, out_dir / "checkpoint.pt", restore=True)
    tables = ("vit_metrics.csv", "vit_metrics.json", "maps.npz", "vit_snapshots.pt")
    save_result(result, settings, *(out_dir / name for name in tables))
    print(f"DONE resumed_from_epoch={result.info['resumed_from_epoch']}", flush=True)


if __name__ == "__main__":
    # as a user's run: a parent that ignores SIGINT (a pytest-xdist worker does) passes that on to its children
    signal.signal(signal.SIGINT, signal.default_int_handler)
    main(*sys.argv[1:])
