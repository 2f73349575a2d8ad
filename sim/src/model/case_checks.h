// The checks of validateCase after the config's own (validate), for the
// builder that has validated the config already (case_spec.h).
#pragma once

#include "seam/sim/model/case.h"

namespace seam {

/// validateCase less validate(c.config): the batch against the config and
/// the config against the model's shapes and cuts.
Status validateCaseAgainstConfig(const Case& c);

}  // namespace seam
