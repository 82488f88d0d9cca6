// Tensor statistics: see include/ckpt/analysis/tensor_stats.h (to be written).
