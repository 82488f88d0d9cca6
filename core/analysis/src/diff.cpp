// Checkpoint diff: see include/ckpt/analysis/diff.h (to be written).
