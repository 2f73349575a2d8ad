#include "seam/sim/model/pattern.h"

#include <string>

namespace seam {

char layerChar(LayerKind kind) {
  switch (kind) {
    case LayerKind::kMamba:
      return 'M';
    case LayerKind::kAttention:
      return '*';
    case LayerKind::kDenseMlp:
      return '-';
    case LayerKind::kMoe:
      return 'E';
    case LayerKind::kGatedDeltaNet:
      return 'G';
    case LayerKind::kParallelMixer:
      return 'P';
  }
  return '?';
}

std::string Pattern::text() const {
  std::string out;
  size_t next_cut = 0;
  for (int i = 0; i < size(); ++i) {
    if (next_cut < cuts.size() && cuts[next_cut] == i) {
      out += '|';
      ++next_cut;
    }
    out += layerChar(layers[i]);
  }
  if (!mtp.empty()) {
    out += '/';
    for (LayerKind k : mtp) out += layerChar(k);
  }
  return out;
}

namespace {

std::string quoted(std::string_view text) {
  std::string out = "pattern \"";
  for (char c : text) {
    // Keep the one-line error printable whatever bytes arrive.
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      static const char* kHex = "0123456789abcdef";
      out += "\\x";
      out += kHex[(static_cast<unsigned char>(c) >> 4) & 0xf];
      out += kHex[static_cast<unsigned char>(c) & 0xf];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string shown(char c) {
  if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
    static const char* kHex = "0123456789abcdef";
    return std::string("byte 0x") + kHex[(static_cast<unsigned char>(c) >> 4) & 0xf] +
           kHex[static_cast<unsigned char>(c) & 0xf];
  }
  return std::string("'") + c + "'";
}

bool toKind(char c, PatternAlphabet alphabet, LayerKind* kind) {
  if (alphabet == PatternAlphabet::kSingleStage) {
    switch (c) {
      case 'M':
        *kind = LayerKind::kMamba;
        return true;
      case '*':
        *kind = LayerKind::kAttention;
        return true;
      case '-':
        *kind = LayerKind::kDenseMlp;
        return true;
      case 'E':
        *kind = LayerKind::kMoe;
        return true;
      default:
        return false;
    }
  }
  if (alphabet == PatternAlphabet::kTwoStage) {
    switch (c) {
      case 'M':
        *kind = LayerKind::kMamba;
        return true;
      case '*':
        *kind = LayerKind::kAttention;
        return true;
      case 'G':
        *kind = LayerKind::kGatedDeltaNet;
        return true;
      case 'P':
        *kind = LayerKind::kParallelMixer;
        return true;
      case '-':
        *kind = LayerKind::kDenseMlp;
        return true;
      case 'E':
        *kind = LayerKind::kMoe;
        return true;
      default:
        return false;
    }
  }
  switch (c) {
    case 'G':
      *kind = LayerKind::kGatedDeltaNet;
      return true;
    case '*':
      *kind = LayerKind::kAttention;
      return true;
    default:
      return false;
  }
}

/// Two-stage stacks alternate a mixer and an FFN, one pair per layer.
bool wrongTwoStageSlot(int index, LayerKind kind) { return (index % 2 == 0) != isMixer(kind); }

}  // namespace

Expected<Pattern> parsePattern(std::string_view text, PatternAlphabet alphabet) {
  if (text.empty()) return Status::invalid("pattern is empty");
  if (text.size() > kMaxPatternLength) {
    return Status::invalid("pattern of " + std::to_string(text.size()) +
                           " characters is longer than " + std::to_string(kMaxPatternLength));
  }
  const bool two = alphabet == PatternAlphabet::kTwoStage;
  const bool single = alphabet == PatternAlphabet::kSingleStage || two;
  const char* expected = alphabet == PatternAlphabet::kSingleStage ? "a layer (M * - E), '|' or '/'"
                         : two ? "a stage (mixer M * G P, FFN - E), '|' or '/'"
                               : "a layer (G *)";
  Pattern p;
  bool in_mtp = false;
  for (size_t pos = 0; pos < text.size(); ++pos) {
    const char c = text[pos];
    // Built only on the error paths: parsing stays cheap.
    auto where = [&] {
      return quoted(text) + ": " + shown(c) + " at position " + std::to_string(pos);
    };
    LayerKind kind;
    if (toKind(c, alphabet, &kind)) {
      if (two) {
        const int index = static_cast<int>(in_mtp ? p.mtp.size() : p.layers.size());
        if (wrongTwoStageSlot(index, kind)) {
          return Status::invalid(
              where() + (isMixer(kind) ? " is a mixer where the layer's FFN (- E) belongs"
                                       : " is an FFN where a layer's mixer (M * G P) belongs"));
        }
        if (in_mtp && index >= 2) {
          return Status::invalid(where() +
                                 ": a second MTP layer (SGLang runs one nextn decoder layer)");
        }
        (in_mtp ? p.mtp : p.layers).push_back(kind);
        continue;
      }
      if (in_mtp) {
        // SGLang's NemotronHMTP builds only attention and MoE MTP layers.
        if (kind != LayerKind::kAttention && kind != LayerKind::kMoe) {
          return Status::invalid(where() + " is not allowed in an MTP pattern (only * and E)");
        }
        p.mtp.push_back(kind);
      } else {
        p.layers.push_back(kind);
      }
      continue;
    }
    if (single && c == '|') {
      if (in_mtp) return Status::invalid(where() + ": a pipeline cut inside the MTP pattern");
      if (p.layers.empty())
        return Status::invalid(where() + ": a pipeline cut before the first layer");
      if (!p.cuts.empty() && p.cuts.back() == p.size()) {
        return Status::invalid(where() + ": two pipeline cuts with no layer between them");
      }
      if (two && p.size() % 2 != 0) {
        return Status::invalid(
            where() + ": a pipeline cut inside a decoder layer (between its mixer and FFN)");
      }
      p.cuts.push_back(p.size());
      continue;
    }
    if (single && c == '/') {
      if (in_mtp) {
        // SGLang's MTP asserts num_mtp_layers == 1: one MTP depth only.
        return Status::invalid(where() + ": a second MTP depth (SGLang runs one MTP step)");
      }
      if (p.layers.empty()) return Status::invalid(where() + ": an MTP pattern with no main stack");
      if (two && p.size() % 2 != 0) {
        return Status::invalid(where() + ": the last decoder layer has a mixer but no FFN");
      }
      in_mtp = true;
      continue;
    }
    return Status::invalid(where() + " is not " + expected);
  }
  if (!p.cuts.empty() && p.cuts.back() == p.size()) {
    return Status::invalid(quoted(text) + ": a pipeline cut after the last layer");
  }
  if (in_mtp && p.mtp.empty())
    return Status::invalid(quoted(text) + ": '/' with no MTP layer after it");
  if (two && (p.layers.size() % 2 != 0 || p.mtp.size() % 2 != 0)) {
    return Status::invalid(quoted(text) + ": the last decoder layer has a mixer but no FFN");
  }
  return p;
}

}  // namespace seam
