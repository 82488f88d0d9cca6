#!/bin/sh
# Seeds fuzz_folder's corpus from make_sharded.py's output: each layout's
# description file behind the byte that picks it (fuzz_folder.cpp).
#   tests/fuzz/seed_folder_corpus.sh SHARDED_DIR CORPUS_DIR
set -eu
src=$1
out=$2
mkdir -p "$out"
seed() { { printf "\\$(printf '%03o' "$1")"; cat "$src/$2"; } >"$out/seed_$1"; }
seed 0 hf_st/model.safetensors.index.json
seed 1 dcp_ws2/.metadata
seed 2 fsdp_ws2/model_rank0.pt
seed 3 ds_z2_ws2/global_step1000/mp_rank_00_model_states.pt
