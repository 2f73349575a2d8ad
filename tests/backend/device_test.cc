#include "seam/backend/device.h"

#include <gtest/gtest.h>

#include "seam/backend/raii.h"

namespace seam::backend {
namespace {

TEST(Backend, ReportsTheCudaAndNcclVersionsItLinks) {
  auto v = runtimeVersions();
  ASSERT_TRUE(v.hasValue()) << v.status().message();
  EXPECT_GE(v->cuda_runtime, 12000);
  EXPECT_GE(v->nccl, 22000);
  EXPECT_NE(v->describe().find("nccl 2."), std::string::npos) << v->describe();
}

TEST(Backend, ListsEveryDeviceWithItsNameAndMemory) {
  auto devices = listDevices();
  ASSERT_TRUE(devices.hasValue()) << devices.status().message();
  if (devices->empty())
    GTEST_SKIP() << "no CUDA device on this machine: nothing listed to check (GPU tests run on "
                    "the lent GPU machine)";
  for (const DeviceInfo& d : *devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_GT(d.memory_bytes, 0u);
  }
}

TEST(Backend, TimesAnEmptyStreamWithEvents) {
  auto devices = listDevices();
  ASSERT_TRUE(devices.hasValue());
  if (devices->empty())
    GTEST_SKIP() << "no CUDA device on this machine (GPU tests run on the lent GPU machine)";
  auto stream = Stream::create();
  ASSERT_TRUE(stream.hasValue()) << stream.status().message();
  auto start = Event::create();
  auto stop = Event::create();
  ASSERT_TRUE(start && stop);
  ASSERT_TRUE(start->record(*stream).isOk());
  ASSERT_TRUE(stop->record(*stream).isOk());
  ASSERT_TRUE(stream->synchronize().isOk());
  auto ms = stop->elapsedSince(*start);
  ASSERT_TRUE(ms.hasValue()) << ms.status().message();
  EXPECT_GE(*ms, 0.0f);
}

}  // namespace
}  // namespace seam::backend
