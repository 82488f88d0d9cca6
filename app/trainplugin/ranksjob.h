#pragma once
// A training job of several data-parallel processes on this machine: the
// ranks are ckptscope-train processes started by the one launcher of
// `ckptscope-cli train --nproc N` (runLocalRanks, ckpt/train/launch.h),
// hosted by the thread that runs the job. They print their progress as
// lines (ckpt/train/progress_stream.h), which become the job's steps,
// prepared events and result; every other line goes to the log with its
// rank in front. Part of the plugin (it links ckpt_train).

#include <memory>
#include <string>

#include "ckpt/trainapi/train_backend.h"

namespace ckpt {

std::unique_ptr<TrainJob> newRunRanks(const RunConfig& config, const Processes& processes);
std::unique_ptr<TrainJob> resumeRanks(const ResumeOptions& options, const Processes& processes);
std::unique_ptr<TrainJob> finetuneRanks(const std::string& checkpoint,
                                        const FinetuneOptions& options, const Processes& processes);

}  // namespace ckpt
