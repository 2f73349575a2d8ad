// Shared by the JUnit tests: validates a file against the JUnit schema in
// tests/reports/data/junit.xsd with xmllint (libxml2-utils, installed by
// tools/setup.sh). A missing xmllint fails the test: it is no reason to pass.
#pragma once

#include <cstdio>
#include <string>

namespace seam::testing {

/// "" when `path` validates; else what xmllint said (or why it did not run).
inline std::string junitSchemaErrors(const std::string& path) {
  const std::string schema = std::string(SEAM_SOURCE_DIR) + "/tests/reports/data/junit.xsd";
  const std::string cmd = "xmllint --noout --schema '" + schema + "' '" + path + "' 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return "could not run xmllint";
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  const int status = pclose(pipe);
  return status == 0 ? std::string() : "xmllint (exit " + std::to_string(status) + "): " + out;
}

}  // namespace seam::testing
