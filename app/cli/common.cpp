#include "common.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "ckpt/format/json_export.h"

namespace ckpt::cli {

int failWith(const std::string& message) {
  std::fprintf(stderr, "ckptscope-cli: %s\n", message.c_str());
  return kExitFailure;
}

void printJson(const nlohmann::ordered_json& doc, int indent) {
  std::string out = dumpJson(doc, indent);
  out += '\n';
  std::fwrite(out.data(), 1, out.size(), stdout);
}

void printUsage(const std::string& command) {
  const char* all =
      "usage: ckptscope-cli <command> [options]\n"
      "\n"
      "commands:\n"
      "  info FILE [--json]     metadata, config and the tensor table of a checkpoint\n"
      "                         (FILE: also a sharded checkpoint's folder or index file)\n"
      "  ls DIR [--json] [--no-cache]\n"
      "                         every checkpoint under DIR, grouped into runs\n"
      "  verify FILE            check every record's CRC and every tensor's extent\n"
      "  diff A B [--json] [--top N]   what changed between two checkpoints: structure,\n"
      "                         per-tensor and per-block change, metadata\n"
      "  scan PATH... [--json] [--recursive]   would a file run code if Python loaded it?\n"
      "                         every global its pickles name, judged; a sharded checkpoint's\n"
      "                         folder or index: every file it names; exit 3 if any is dangerous\n"
      "  metrics DIR|FILE... [--json|--csv] [--metric NAME] [--log FILE|DIR]\n"
      "                         every run's curves (metrics.jsonl, console logs,\n"
      "                         checkpoints) as the Curves tab draws them\n"
      "  runs DIR... [--json|--csv] [--metric NAME] [--group-by KEY] [--filter EXPR]\n"
      "                         one row per run or group: the hyperparameters that differ,\n"
      "                         the metric's last and best, the checkpoint nearest the best\n"
      "  prune RUN_DIR [--keep-best METRIC] [--keep-last N] [--every K] [--apply] [--json]\n"
      "                         which checkpoints the rules keep and which go (a dry run\n"
      "                         unless --apply: then to the desktop trash, never deleted)\n"
      "  consolidate SRC OUT.pt|OUT.safetensors [--dtype fp32|bf16|fp16] [--model-only]\n"
      "                         one file from a sharded checkpoint, a tensor at a time\n"
      "  export SRC OUT [--model-only] [--dtype bf16|fp16|fp32] [--format pt|safetensors]\n"
      "                         a slim copy without optimizer state, a tensor at a time\n"
      "  train, resume, finetune, score, generate   training and inference (LibTorch;\n"
      "                         see ckptscope-cli train --help)\n"
      "  stop ssh://host/RUN_DIR [--pid N | --job ID]   a run started on that host (resume,\n"
      "                         finetune of a remote checkpoint) finishes its step, saves, ends\n"
      "  serve --stdio          the agent another machine's ckptscope-cli talks to over ssh\n"
      "                         (docs/REMOTE.md)\n"
      "\n"
      "ls, info, verify, diff, scan, metrics and runs also read another machine's files through\n"
      "ssh: ssh://[user@]host[:port]/path, or host:/path where no local path has that name;\n"
      "they print what the same command prints on the host (text or --json). diff A B,\n"
      "metrics, runs and scan take paths on several machines at once (a host's runs and files\n"
      "are named HOST:RUN and ssh://HOST/PATH).\n"
      "The host needs ckptscope-cli on its PATH (or --remote-cli PATH, CKPTSCOPE_REMOTE_CLI);\n"
      "CKPTSCOPE_SSH names the ssh program and its options (\"ssh -F config\").\n"
      "\n"
      "A checkpoint (FILE, A, B, SRC) is a .pt, .bin or .safetensors file, or a sharded\n"
      "checkpoint (DCP, FSDP, DeepSpeed, Hugging Face shards): its folder or index file.\n"
      "\n"
      "Exit status: 0 success, 1 a file cannot be read or is damaged, 2 usage error,\n"
      "3 scan found a file that would run code.\n";
  if (command == "info")
    std::fputs("usage: ckptscope-cli info FILE [--json]\n", stderr);
  else if (command == "ls")
    std::fputs(
        "usage: ckptscope-cli ls DIR [--json] [--no-cache]\n"
        "  --no-cache: read every checkpoint again, without the listing cache\n"
        "    (a file unchanged since the last listing of DIR is not read again)\n",
        stderr);
  else if (command == "serve")
    std::fputs(
        "usage: ckptscope-cli serve --stdio\n"
        "  JSON lines on stdin and stdout (docs/REMOTE.md): what ssh starts on a host\n",
        stderr);
  else if (command == "verify")
    std::fputs("usage: ckptscope-cli verify FILE\n", stderr);
  else if (command == "diff")
    std::fputs("usage: ckptscope-cli diff A B [--json] [--top N]\n", stderr);
  else if (command == "consolidate")
    std::fputs(
        "usage: ckptscope-cli consolidate SRC OUT.pt|OUT.safetensors [--dtype fp32|bf16|fp16] "
        "[--model-only]\n"
        "  SRC: a checkpoint file, a sharded checkpoint's folder or index; OUT must not exist\n",
        stderr);
  else if (command == "export")
    std::fputs(
        "usage: ckptscope-cli export SRC OUT [--model-only] [--dtype bf16|fp16|fp32]\n"
        "                            [--format pt|safetensors]\n"
        "  a copy of SRC without its optimizer state, streamed a tensor at a time; OUT must not\n"
        "  exist. pt: the modern_llm layout (model_state, metadata, config) that torch.load\n"
        "  reads; safetensors: the model state, with the metadata and config in __metadata__.\n"
        "  The copy records its source (exported_from: path, size, mtime, step).\n"
        "  --model-only also leaves out other tensors (RNG state, ...); --format defaults to\n"
        "  OUT's extension (.safetensors, else pt); --dtype converts floating-point tensors.\n",
        stderr);
  else if (command == "scan")
    std::fputs(
        "usage: ckptscope-cli scan PATH... [--json] [--recursive]\n"
        "  PATH: a checkpoint file, a folder (its files; --recursive: and its subfolders), or a\n"
        "  sharded checkpoint's folder or index (every file it names, then one verdict for the\n"
        "  checkpoint: the worst, naming its file)\n",
        stderr);
  else if (command == "prune")
    std::fputs(
        "usage: ckptscope-cli prune RUN_DIR [--keep-best METRIC] [--keep-last N] [--every K]\n"
        "                           [--dry-run|--apply] [--json]\n"
        "  keeps the best checkpoint by METRIC (val_loss, loss, ...), the last N, steps that are\n"
        "  multiples of K, every stage's final, the newest, and every file that is not a step\n"
        "  checkpoint; prints the plan (a dry run) unless --apply, which moves the others to the\n"
        "  desktop trash (~/.local/share/Trash) or, on another filesystem, to RUN_DIR/.trash/\n",
        stderr);
  else if (command == "metrics")
    std::fputs(
        "usage: ckptscope-cli metrics DIR|FILE... [--json|--csv] [--metric NAME]... [--log "
        "FILE|DIR]...\n"
        "  DIR: an experiment directory (its runs); FILE: a checkpoint, metrics.jsonl or "
        "TensorBoard\n"
        "  event file (the run of its directory) or a console log (*.log, *.out, *.err, *.txt: "
        "read\n"
        "  for every run, like --log)\n"
        "  --no-cache: read every metrics.jsonl whole, without the metrics cache in\n"
        "  $XDG_CACHE_HOME/ckptscope (also CKPTSCOPE_NO_CACHE=1); --stats: points held, the\n"
        "  bytes they take and what the cache did, as JSON on stderr\n",
        stderr);
  else if (command == "runs")
    std::fputs(
        "usage: ckptscope-cli runs DIR... [--json|--csv] [--metric NAME] [--group-by KEY]\n"
        "                         [--filter EXPR] [--sort [-]COLUMN] [--goal min|max]\n"
        "  one row per run (or group): the hyperparameters that differ between the rows shown\n"
        "  (RUN.json, the checkpoints' config), the metric's last value, its best (min for\n"
        "  losses, max for accuracy / reward / score; --goal overrides), the step of the best\n"
        "  and the checkpoint nearest it. --metric defaults to val_loss, else loss.\n"
        "  --group-by KEY | all-but[:KEY] (seed by default) | name[:WORD] (the name with its\n"
        "  last number, or the one after WORD, as *): one row per group, its mean line's last\n"
        "  and best. --filter: NAME OP VALUE (OP: == != < <= > >= ~ !~) joined by and / or /\n"
        "  not and parentheses: 'lr == 3e-4 and val_loss < 2.5', 'name ~ sft'. --sort: a\n"
        "  column (name, best, last, best_step, a hyperparameter), '-' first: descending.\n"
        "  --no-cache: as for metrics\n",
        stderr);
  else
    std::fputs(all, stderr);
}

int usageError(const std::string& problem, const std::string& command) {
  if (!problem.empty()) std::fprintf(stderr, "ckptscope-cli: %s\n", problem.c_str());
  printUsage(command);
  return kExitUsage;
}

bool Args::has(const std::string& flag) const {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

bool parseArgs(int argc, char** argv, int first, const std::vector<std::string>& allowedFlags,
               Args& out, std::string& problem) {
  bool onlyPositional = false;
  for (int i = first; i < argc; ++i) {
    const std::string a = argv[i];
    if (!onlyPositional && a == "--") {
      onlyPositional = true;
    } else if (!onlyPositional && a.size() > 1 && a[0] == '-') {
      if (std::find(allowedFlags.begin(), allowedFlags.end(), a) == allowedFlags.end()) {
        problem = "unknown option " + a;
        return false;
      }
      out.flags.push_back(a);
    } else {
      out.positional.push_back(a);
    }
  }
  return true;
}

}  // namespace ckpt::cli
