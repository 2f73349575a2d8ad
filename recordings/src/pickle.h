// Pickled Flight Recorder dumps read without Python (pickle.cc says which
// opcodes): the value comes back as the JSON a JSON dump would give.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "seam/recordings/recording.h"

namespace seam::recordings {

/// True when the first bytes are a pickle's PROTO opcode (protocol 2 to 5).
bool looksLikePickle(const std::string& head);

/// The value pickled in `bytes`: dicts as objects (int keys as their
/// digits), lists and tuples as arrays, the typed-list wrappers unwrapped.
/// A truncated or foreign pickle: a one-line error naming `label` and the
/// byte offset.
Expected<nlohmann::json> unpickle(const std::string& bytes, const std::string& label);

}  // namespace seam::recordings
