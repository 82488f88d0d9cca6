#!/usr/bin/python3
"""Runs as PyTorch Lightning leaves them, for tst_trainer_layouts.

    python3 make_trainer_layouts.py OUT

Writes OUT/lt/ with the bytes Lightning's own code writes:
  * CSVLogger (lightning.fabric.loggers.csv_logs._ExperimentWriter.save):
    metrics.csv rewritten whole through csv.DictWriter, the header the keys
    in the order first logged (`step` added by log_metrics), a row per
    log_metrics call with the keys it did not log left empty; Python's
    csv writes "\\r\\n" line ends and str() of each float.
  * hparams.yaml (save_hparams_to_yaml): flat `key: value` lines.
  * ModelCheckpoint: <version>/checkpoints/epoch=E-step=S.ckpt (the default
    "{epoch}-{step}" name; with a "{val_loss:.2f}" template
    epoch=E-step=S-val_loss=V.ckpt) and last.ckpt, torch.save of the dict
    Trainer._checkpoint_connector.dump_checkpoint builds: epoch, global_step,
    pytorch-lightning_version, state_dict, loops, callbacks,
    optimizer_states, lr_schedulers, hparams_name, hyper_parameters.
  * TensorBoardLogger: an event file in the version folder (written with
    make_tfevents_fixtures' record writer) with hp_metric and train_loss.

and OUT/ml_art/mlruns/: a RUNNING run whose checkpoints are artifacts
(artifacts/checkpoints/epoch_{1,2}.pt, steps 100 and 200);
and OUT/ml/mlruns/ as MLflow's FileStore (mlflow.store.tracking.file_store)
writes it: <experiment_id>/meta.yaml and <experiment_id>/<run_id>/meta.yaml
through yaml.dump(default_flow_style=False) of the persisted run info,
metrics/<key> appended "%s %s %s\n" % (timestamp_ms, value, step) (a key
with '/' a subfolder), params/<key> and tags/<key> the value as text;
.trash/ holding a deleted run; experiment 0 with no runs.
"""
import csv
import math
import os
import shutil
import sys

import torch
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_tfevents_fixtures as tfw  # noqa: E402


def state_dict(seed):
    g = torch.Generator().manual_seed(seed)
    return {"layer.weight": torch.randn(4, 3, generator=g), "layer.bias": torch.randn(4, generator=g)}


def lightning_checkpoint(path, epoch, step, best_path, best_score):
    sd = state_dict(step)
    adam = {
        "state": {i: {"step": torch.tensor(float(step)), "exp_avg": torch.zeros_like(t),
                      "exp_avg_sq": torch.zeros_like(t)} for i, t in enumerate(sd.values())},
        "param_groups": [{"lr": 0.001, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0,
                          "amsgrad": False, "params": [0, 1]}],
    }
    ckpt_key = ("ModelCheckpoint{'monitor': 'val_loss', 'mode': 'min', 'every_n_train_steps': 0, "
                "'every_n_epochs': 1, 'train_time_interval': None}")
    checkpoint = {
        "epoch": epoch,
        "global_step": step,
        "pytorch-lightning_version": "2.1.0",
        "state_dict": sd,
        "loops": {"fit_loop": {"state_dict": {}, "epoch_progress": {"current": {"completed": epoch}}}},
        "callbacks": {ckpt_key: {"monitor": "val_loss", "best_model_score": torch.tensor(best_score),
                                 "best_model_path": best_path, "current_score": torch.tensor(best_score),
                                 "dirpath": os.path.dirname(path), "best_k_models": {},
                                 "kth_best_model_path": "", "kth_value": torch.tensor(math.inf),
                                 "last_model_path": ""}},
        "optimizer_states": [adam],
        "lr_schedulers": [{"step_size": 10, "gamma": 0.5, "base_lrs": [0.001], "last_epoch": epoch,
                           "_step_count": epoch + 1, "_last_lr": [0.001]}],
        "hparams_name": "kwargs",
        "hyper_parameters": {"lr": 0.001, "hidden": 4},
    }
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.save(checkpoint, path)


def write_metrics_csv(folder, rows):
    """_ExperimentWriter.log_metrics for each row, then save()."""
    metrics = []
    for step, values in rows:
        m = dict(values)
        m["step"] = step
        metrics.append(m)
    last_m = {}
    for m in metrics:
        last_m.update(m)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "metrics.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(last_m.keys()))
        writer.writeheader()
        writer.writerows(metrics)


def write_hparams(folder, hparams):
    with open(os.path.join(folder, "hparams.yaml"), "w") as f:
        for k, v in hparams.items():
            f.write(f"{k}: {v}\n")


def training_rows(steps_per_epoch, epochs, log_every, seed):
    """What a LightningModule's self.log calls give: train_loss every
    log_every steps (with epoch, as the trainer adds it), val_loss and
    val_acc once an epoch at the epoch's last step."""
    rows = []
    for epoch in range(epochs):
        for s in range(log_every, steps_per_epoch + 1, log_every):
            step = epoch * steps_per_epoch + s - 1
            loss = 3.0 * math.exp(-step / 40.0) + 0.01 * math.sin(step + seed)
            rows.append((step, {"train_loss": loss, "epoch": epoch}))
        last = (epoch + 1) * steps_per_epoch - 1
        rows.append((last, {"val_loss": 2.5 * math.exp(-last / 50.0) + 0.1, "val_acc": 0.1 + 0.2 * epoch,
                            "epoch": epoch}))
    return rows


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = os.path.join(argv[1], "lt")

    v0 = os.path.join(root, "lightning_logs", "version_0")
    rows = training_rows(50, 2, 10, 0)
    rows.append((34, {"train_loss": float("nan"), "epoch": 0}))  # a diverged batch: "nan"
    rows.sort(key=lambda r: r[0])
    write_metrics_csv(v0, rows)
    write_hparams(v0, {"lr": 0.001, "hidden": 4, "optimizer": "adam"})
    # ModelCheckpoint(monitor="val_loss", filename="{epoch}-{step}-{val_loss:.2f}",
    # save_top_k=2, save_last=True): the epoch-1 file stays its best when
    # epoch 2's val_loss is worse; last.ckpt is written after each save.
    best = os.path.join(v0, "checkpoints", "epoch=1-step=100-val_loss=0.81.ckpt")
    lightning_checkpoint(os.path.join(v0, "checkpoints", "epoch=0-step=50.ckpt"), 0, 50, "", 1.2)
    lightning_checkpoint(best, 1, 100, best, 0.81)
    lightning_checkpoint(os.path.join(v0, "checkpoints", "epoch=2-step=150-val_loss=0.90.ckpt"), 2, 150,
                         best, 0.81)
    lightning_checkpoint(os.path.join(v0, "checkpoints", "last.ckpt"), 2, 150, best, 0.81)
    t0 = 1700000000.5
    records = [tfw.record(tfw.event(t0, file_version=b"brain.Event:2"))]
    records.append(tfw.record(tfw.event(t0, step=0, values=[tfw.value("hp_metric", simple=-1.0)])))
    for i, (step, values) in enumerate(rows):
        if "train_loss" in values and not math.isnan(values["train_loss"]):
            records.append(tfw.record(tfw.event(t0 + i, step=step,
                                                values=[tfw.value("train_loss", simple=values["train_loss"])])))
    tfw.write(os.path.join(v0, "events.out.tfevents.1700000000.host.4242.0"), records)

    # A run still before its first checkpoint: metrics.csv and hparams.yaml only.
    v1 = os.path.join(root, "lightning_logs", "version_1")
    write_metrics_csv(v1, training_rows(30, 1, 10, 1))
    write_hparams(v1, {"lr": 0.0003, "hidden": 4, "optimizer": "adam"})

    # save_dir/name of one's own: my_exp/version_10 (natural order after version_2).
    for version, steps in (("version_2", 20), ("version_10", 40)):
        v = os.path.join(root, "my_exp", version)
        write_metrics_csv(v, training_rows(steps, 1, 10, 2))
        lightning_checkpoint(os.path.join(v, "checkpoints", f"epoch=0-step={steps}.ckpt"), 0, steps, "", 1.0)
    mlflow_store(os.path.join(argv[1], "ml", "mlruns"))
    mlflow_artifacts(os.path.join(argv[1], "ml_art", "mlruns"))
    return 0


def mlflow_run_meta(exp_id, run_id, run_name, start, end, root):
    return {"artifact_uri": f"file://{root}/{exp_id}/{run_id}/artifacts", "end_time": end,
            "entry_point_name": "", "experiment_id": exp_id, "lifecycle_stage": "active",
            "name": "", "run_id": run_id, "run_name": run_name, "run_uuid": run_id,
            "source_name": "", "source_type": 4, "source_version": "", "start_time": start,
            "status": 3, "tags": [], "user_id": "trainer"}


def write_yaml(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        yaml.dump(data, f, default_flow_style=False, allow_unicode=True, Dumper=yaml.SafeDumper)


def write_text(path, text, append=False):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a" if append else "w") as f:
        f.write(text)


def log_metric(run_dir, key, value, timestamp, step):
    write_text(os.path.join(run_dir, "metrics", *key.split("/")),
               "%s %s %s\n" % (timestamp, value, step), append=True)


def mlflow_store(root):
    root = os.path.abspath(root)
    shutil.rmtree(root, ignore_errors=True)  # metric files are appended to: start afresh
    write_yaml(os.path.join(root, "0", "meta.yaml"),
               {"artifact_location": f"file://{root}/0", "creation_time": 1700000000000,
                "experiment_id": "0", "last_update_time": 1700000000000,
                "lifecycle_stage": "active", "name": "Default"})
    write_yaml(os.path.join(root, "1", "meta.yaml"),
               {"artifact_location": f"file://{root}/1", "creation_time": 1700000000000,
                "experiment_id": "1", "last_update_time": 1700000000000,
                "lifecycle_stage": "active", "name": "sweep"})
    runs = [("0a1b2c3d4e5f60718293a4b5c6d7e8f9", "lr3e-4-seed2", 3e-4),
            ("1a1b2c3d4e5f60718293a4b5c6d7e8f9", "", 1e-3),      # named by its tag only
            ("2a1b2c3d4e5f60718293a4b5c6d7e8f9", None, 1e-4)]    # neither: its id
    t0 = 1700000100000
    for n, (run_id, name, lr) in enumerate(runs):
        run_dir = os.path.join(root, "1", run_id)
        write_yaml(os.path.join(run_dir, "meta.yaml"),
                   mlflow_run_meta("1", run_id, name or "", t0, t0 + 90000, root))
        if name is not None:
            write_text(os.path.join(run_dir, "tags", "mlflow.runName"), name or "tagged-run")
        write_text(os.path.join(run_dir, "tags", "mlflow.user"), "trainer")
        write_text(os.path.join(run_dir, "params", "lr"), str(lr))
        write_text(os.path.join(run_dir, "params", "optimizer", "name"), "adamw")
        for i, step in enumerate(range(0, 200, 20)):
            loss = 3.0 * math.exp(-step / (60.0 + n)) + 0.001 * i
            log_metric(run_dir, "train/loss", loss, t0 + 1000 * i + 7, step)
            log_metric(run_dir, "lr", lr * (1 - step / 400), t0 + 1000 * i + 8, step)
            if step % 100 == 80:
                log_metric(run_dir, "val_loss", loss + 0.1 if n != 0 or step != 80 else float("nan"),
                           t0 + 1000 * i + 9, step)
        # logged again at the last step (mlflow allows it): the later value counts
        log_metric(run_dir, "lr", 0.0, t0 + 20000, 180)
        os.makedirs(os.path.join(run_dir, "artifacts"), exist_ok=True)
    trash = os.path.join(root, ".trash", "9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f")
    write_yaml(os.path.join(trash, "meta.yaml"),
               mlflow_run_meta("1", "9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f", "deleted", t0, t0, root))
    log_metric(trash, "loss", 1.0, t0, 0)


def mlflow_artifacts(root):
    """A run that logs its checkpoints as artifacts (mlflow.log_artifact(path,
    artifact_path="checkpoints") copies the file to <run>/artifacts/checkpoints/),
    still RUNNING (status 1, end_time null)."""
    root = os.path.abspath(root)
    shutil.rmtree(root, ignore_errors=True)
    write_yaml(os.path.join(root, "3", "meta.yaml"),
               {"artifact_location": f"file://{root}/3", "creation_time": 1700000000000,
                "experiment_id": "3", "last_update_time": 1700000000000,
                "lifecycle_stage": "active", "name": "ckpts"})
    run_id = "3a1b2c3d4e5f60718293a4b5c6d7e8f9"
    run_dir = os.path.join(root, "3", run_id)
    meta = mlflow_run_meta("3", run_id, "with-artifacts", 1700000100000, None, root)
    meta["status"] = 1
    write_yaml(os.path.join(run_dir, "meta.yaml"), meta)
    for step in range(0, 300, 50):
        log_metric(run_dir, "loss", 3.0 - step / 100, 1700000100000 + step, step)
    for epoch in (1, 2):
        path = os.path.join(run_dir, "artifacts", "checkpoints", f"epoch_{epoch}.pt")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        torch.save({"model": state_dict(epoch), "epoch": epoch, "step": 100 * epoch}, path)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
