// Tests of the device selector subset (sched/cel/cel.h) with the expressions DRA drivers ship
// (NVIDIA's gpu.nvidia.com DeviceClasses, the example driver's gpu.example.com, claims that
// select by memory or product) and the errors for everything outside the subset.
#include "sched/cel/cel.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tidepool::sched::cel {
namespace {

using model::DeviceAttribute;
using ::testing::HasSubstr;

model::Device A100() {
  model::Device d;
  d.name = "gpu-0";
  d.attributes["gpu.nvidia.com/type"] = {.kind = DeviceAttribute::Kind::kString, .text = "gpu"};
  d.attributes["gpu.nvidia.com/productName"] = {.kind = DeviceAttribute::Kind::kString,
                                                .text = "NVIDIA A100-SXM4-80GB"};
  d.attributes["gpu.nvidia.com/architecture"] = {.kind = DeviceAttribute::Kind::kString,
                                                 .text = "Ampere"};
  d.attributes["gpu.nvidia.com/index"] = {.kind = DeviceAttribute::Kind::kInt, .int_value = 3};
  d.attributes["gpu.nvidia.com/cudaDriverVersion"] = {.kind = DeviceAttribute::Kind::kVersion,
                                                      .text = "12.4.0"};
  d.attributes["gpu.nvidia.com/mig"] = {.kind = DeviceAttribute::Kind::kBool, .bool_value = false};
  d.attributes["resource.kubernetes.io/pcieRoot"] = {.kind = DeviceAttribute::Kind::kString,
                                                     .text = "pci0000:3a"};
  d.capacity["gpu.nvidia.com/memory"] = *model::Quantity::Parse("80Gi");
  return d;
}

class CelTest : public ::testing::Test {
 protected:
  EvalResult Run(std::string_view expr) {
    auto p = Program::Compile(expr);
    EXPECT_TRUE(p.has_value()) << (p ? "" : p.error().ToString());
    if (!p) return {};
    EvalResult r = p->Eval(view_);
    EXPECT_EQ(r.matches, p->Matches(view_)) << expr;
    return r;
  }
  bool True(std::string_view expr) {
    EvalResult r = Run(expr);
    EXPECT_EQ(r.error, "") << expr;
    return r.matches;
  }
  CompileError Refused(std::string_view expr) {
    auto p = Program::Compile(expr);
    EXPECT_FALSE(p.has_value()) << expr;
    return p ? CompileError{} : p.error();
  }

  model::Device device_ = A100();
  DeviceView view_{"gpu.nvidia.com", &device_};
};

TEST_F(CelTest, DriverClassSelectors) {
  EXPECT_TRUE(True("device.driver == 'gpu.nvidia.com'"));
  EXPECT_TRUE(
      True("device.driver == \"gpu.nvidia.com\" && "
           "device.attributes[\"gpu.nvidia.com\"].type == \"gpu\""));
  EXPECT_FALSE(
      True("device.driver == 'gpu.nvidia.com' && "
           "device.attributes['gpu.nvidia.com'].type == 'mig'"));
  EXPECT_FALSE(True("device.driver == 'gpu.example.com'"));
}

TEST_F(CelTest, AttributesByBothSyntaxes) {
  EXPECT_TRUE(True("device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100-SXM4-80GB'"));
  EXPECT_TRUE(True("device.attributes['gpu.nvidia.com']['architecture'] == 'Ampere'"));
  EXPECT_TRUE(True("device.attributes['gpu.nvidia.com'].index >= 2"));
  EXPECT_FALSE(True("device.attributes['gpu.nvidia.com'].index < -1"));
  EXPECT_TRUE(True("!device.attributes['gpu.nvidia.com'].mig"));
  EXPECT_TRUE(True("device.attributes['resource.kubernetes.io'].pcieRoot.startsWith('pci')"));
  EXPECT_TRUE(True("device.attributes['gpu.nvidia.com'].productName.matches('A100|H100')"));
  EXPECT_FALSE(True("device.attributes['gpu.nvidia.com'].productName.contains('H100')"));
  EXPECT_TRUE(True("size(device.attributes['gpu.nvidia.com'].architecture) == 6"));
}

TEST_F(CelTest, CapacityQuantities) {
  EXPECT_TRUE(True("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) >= 0"));
  EXPECT_FALSE(True("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('81Gi')) >= 0"));
  EXPECT_TRUE(True("device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('40Gi'))"));
  EXPECT_TRUE(True("device.capacity['gpu.nvidia.com'].memory.isLessThan(quantity('100G'))"));
}

TEST_F(CelTest, Versions) {
  EXPECT_TRUE(True(
      "device.attributes['gpu.nvidia.com'].cudaDriverVersion.isGreaterThan(semver('12.0.0'))"));
  EXPECT_TRUE(
      True("device.attributes['gpu.nvidia.com'].cudaDriverVersion.compareTo(semver('12.4.0-rc.1')) "
           "> 0"));
  EXPECT_TRUE(True("device.attributes['gpu.nvidia.com'].cudaDriverVersion == semver('12.4.0')"));
}

TEST_F(CelTest, InAndMembership) {
  EXPECT_TRUE(True("device.attributes['gpu.nvidia.com'].architecture in ['Hopper', 'Ampere']"));
  EXPECT_FALSE(True("device.attributes['gpu.nvidia.com'].index in [0, 1, 2]"));
  EXPECT_TRUE(True("'gpu.nvidia.com' in device.attributes"));
  EXPECT_FALSE(True("'gpu.example.com' in device.attributes"));
  EXPECT_TRUE(True("'productName' in device.attributes['gpu.nvidia.com']"));
  EXPECT_TRUE(True("!('memory' in device.capacity['gpu.example.com'])"));
}

TEST_F(CelTest, PrecedenceAndParentheses) {
  EXPECT_TRUE(True("false && false || true"));
  EXPECT_FALSE(True("false && (false || true)"));
  EXPECT_TRUE(True("!(1 > 2) && 'a' < 'b'"));
}

TEST_F(CelTest, MissingKeyIsAnErrorThatNeverMatches) {
  EvalResult r = Run("device.attributes['gpu.nvidia.com'].pcieRoot == 'x'");
  EXPECT_FALSE(r.matches);
  EXPECT_THAT(r.error, HasSubstr("no such key: gpu.nvidia.com/pcieRoot"));
  // CEL's commutative logic: a definite side wins over an error.
  EXPECT_TRUE(True("device.attributes['gpu.nvidia.com'].nope == 'x' || true"));
  EXPECT_FALSE(True("device.attributes['gpu.nvidia.com'].nope == 'x' && false"));
  EvalResult mismatch = Run("device.attributes['gpu.nvidia.com'].index == 3 && 'a' < 1");
  EXPECT_FALSE(mismatch.matches);
  EXPECT_THAT(mismatch.error, HasSubstr("no such overload: string < int"));
  EvalResult not_bool = Run("device.driver");
  EXPECT_FALSE(not_bool.matches);
  EXPECT_THAT(not_bool.error, HasSubstr("not a bool"));
}

TEST_F(CelTest, OutsideTheSubsetIsRefusedWithPosition) {
  CompileError e = Refused("device.attributes.exists(a, a == 'x')");
  EXPECT_EQ(e.position, 18u);
  EXPECT_THAT(e.ToString(), HasSubstr("unsupported function \"exists\""));
  EXPECT_THAT(e.ToString(), HasSubstr("CEL expression \"device.attributes.exists"));
  EXPECT_THAT(Refused("device.capacity['a'].b + 1 > 2").message, HasSubstr("'+'"));
  EXPECT_THAT(Refused("device.driver == 'a' ? true : false").message, HasSubstr("'?'"));
  EXPECT_THAT(Refused("pod.name == 'x'").message, HasSubstr("unknown variable \"pod\""));
  EXPECT_THAT(Refused("device.name == 'x'").message, HasSubstr("unsupported device field"));
  EXPECT_THAT(Refused("quantity('lots')").message, HasSubstr("invalid quantity"));
  EXPECT_THAT(Refused("semver('1.2')").message, HasSubstr("invalid semver"));
  EXPECT_THAT(Refused("1.5 > 1").message, HasSubstr("only decimal int literals"));
  EXPECT_THAT(Refused("device.driver == 'x").message, HasSubstr("unterminated string"));
  EXPECT_THAT(Refused("(device.driver == 'x'").message, HasSubstr("expected \")\""));
  EXPECT_THAT(Refused("").message, HasSubstr("unexpected end"));
  EXPECT_THAT(Refused(std::string(200, '(') + "true" + std::string(200, ')')).message,
              HasSubstr("nested too deeply"));
}

}  // namespace
}  // namespace tidepool::sched::cel
