#include "mpi_stream.h"

#include <thread>

namespace seam::tools {

namespace {

enum Tag : int { kBatchTag = 1, kLastWordTag = 2 };

/// How often rank 0 looks for the other ranks' batches while it has none of
/// its own to store: short against a batch's compute time, long enough that
/// waiting costs the workers nothing.
constexpr std::chrono::milliseconds kPollInterval{2};

}  // namespace

void Outbox::post(std::string batch) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(batch));
  }
  wake_.notify_one();
}

void Outbox::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
  }
  wake_.notify_one();
}

std::vector<std::string> Outbox::take(std::optional<std::chrono::milliseconds> wait, bool& closed) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto ready = [this] { return closed_ || !queue_.empty(); };
  if (wait) {
    wake_.wait_for(lock, *wait, ready);
  } else {
    wake_.wait(lock, ready);
  }
  std::vector<std::string> batches(std::make_move_iterator(queue_.begin()),
                                   std::make_move_iterator(queue_.end()));
  queue_.clear();
  closed = closed_;  // posts come before close, so nothing is left behind
  return batches;
}

std::vector<std::string> streamToRoot(const MpiWorld& mpi,
                                      const std::function<std::string(Outbox&)>& work,
                                      const std::function<void(const std::string&)>& store) {
  Outbox outbox;
  std::string mine;
  std::thread worker([&] {
    mine = work(outbox);
    outbox.close();
  });
  std::vector<std::string> last_words(mpi.root() ? static_cast<std::size_t>(mpi.size()) : 0);
  int others_left = mpi.root() ? mpi.size() - 1 : 0;
  bool closed = false;
  while (!closed || others_left > 0) {
    if (!closed) {
      // Rank 0 wakes at least every poll interval to look for the others' batches.
      for (std::string& batch :
           outbox.take(mpi.root() ? std::optional(kPollInterval) : std::nullopt, closed)) {
        if (mpi.root()) {
          store(batch);
        } else {
          mpi.sendToRoot(kBatchTag, batch);
        }
      }
    } else {
      std::this_thread::sleep_for(kPollInterval);
    }
    while (auto message = mpi.root() ? mpi.poll() : std::nullopt) {
      if (message->tag == kBatchTag) {
        store(message->bytes);
      } else {
        last_words[static_cast<std::size_t>(message->source)] = std::move(message->bytes);
        --others_left;
      }
    }
  }
  worker.join();
  if (!mpi.root()) {
    mpi.sendToRoot(kLastWordTag, mine);
    return {};
  }
  last_words[0] = std::move(mine);
  return last_words;
}

bool runOpened(const MpiWorld& mpi, const Status& open_status) {
  return mpi.broadcast(static_cast<std::int64_t>(open_status ? 1 : 0)) != 0;
}

Status lastWordsStatus(const std::vector<std::string>& last_words) {
  for (const std::string& word : last_words) {
    if (word[0] == 'E') return Status::invalid(word.substr(1));
  }
  return Status::ok();
}

}  // namespace seam::tools
