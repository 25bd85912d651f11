// Specification of the runtime-parameter registry (base/params.hpp): what a module
// declares, what a parameter file and the command line may change, and the one-line
// errors a user sees for anything else.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>

#include "base/error.hpp"
#include "base/params.hpp"
#include "tests/unit/test_util.hpp"

namespace tessera::base {
namespace {

using tessera::testing_util::error_of;

::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

std::string source_of(const Params& p, const std::string& key) {
  for (const ParamSpec* s : p.all())
    if (s->key == key) return s->source;
  return "(undeclared)";
}

// A registry as two modules would declare it, and a scratch parameter file per test.
class ParamsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    p.declare_int("mesh.nxb", 16, 4, 64, "zones per block along each axis");
    p.declare_real("hydro.cfl", 0.8, 0.01, 1.0, "Courant number");
    p.declare_bool("hydro.use_flattening", true, "flatten near strong shocks");
    p.declare_string("hydro.riemann", "hllc", {"hllc", "hlle"}, "Riemann solver");
    p.declare_string("io.basename", "run", {}, "prefix of output files");
    p.declare_string_list("io.plot_vars", {"dens", "pres"}, "variables in plot files");
  }
  void TearDown() override { std::filesystem::remove(path); }

  // Writes `text` to this test's file and loads it.
  void load(const std::string& text) {
    std::ofstream(path) << text;
    p.load_file(path);
  }

  Params p;
  const std::string path =
      (std::filesystem::temp_directory_path() /
       ("tessera_params_" + std::to_string(::getpid()) + "_" +
        ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".toml"))
          .string();
};

TEST_F(ParamsTest, DeclaredParametersStartAtTheirDefaultsWithSourceDefault) {
  EXPECT_EQ(p.get_int("mesh.nxb"), 16);
  EXPECT_DOUBLE_EQ(p.get_real("hydro.cfl"), 0.8);
  EXPECT_TRUE(p.get_bool("hydro.use_flattening"));
  EXPECT_EQ(p.get_string("hydro.riemann"), "hllc");
  EXPECT_EQ(p.get_string_list("io.plot_vars"), (std::vector<std::string>{"dens", "pres"}));
  EXPECT_TRUE(p.has("mesh.nxb"));
  EXPECT_FALSE(p.has("mesh.nyb"));
  for (const ParamSpec* s : p.all()) EXPECT_EQ(s->source, "default") << s->key;
}

TEST_F(ParamsTest, AllListsParametersInKeyOrder) {
  std::vector<std::string> keys;
  for (const ParamSpec* s : p.all()) keys.push_back(s->key);
  EXPECT_EQ(keys, (std::vector<std::string>{"hydro.cfl", "hydro.riemann", "hydro.use_flattening",
                                            "io.basename", "io.plot_vars", "mesh.nxb"}));
}

TEST_F(ParamsTest, BadDeclarationsAreProgrammingErrors) {
  EXPECT_THROW(p.declare_int("mesh.nxb", 8, 4, 64, "again"), std::logic_error);
  EXPECT_THROW(p.declare_int("mesh.nyb", 100, 4, 64, "default out of range"), std::logic_error);
  EXPECT_THROW(p.declare_string("hydro.recon", "weno", {"plm", "ppm"}, "bad"), std::logic_error);
  EXPECT_THROW(p.declare_bool("nosection", true, "no dot"), std::logic_error);
  EXPECT_THROW(p.declare_bool("a.b.c.d", true, "too deep"), std::logic_error);
  EXPECT_THROW(p.declare_bool("a..c", true, "empty group"), std::logic_error);
}

// Given a key of a group (memory.tier.backend), then a [section.group] table and an
// override of the full key set it, and an unknown key in the group is an error naming it.
TEST_F(ParamsTest, GroupKeysComeFromASubTableOrTheFullKey) {
  p.declare_string("memory.tier.backend", "none", {"none", "numa"}, "tiers");
  p.declare_real("memory.tier.slow_read_bw", 39e9, 1e6, 1e13, "slow read bandwidth");
  load("[memory.tier]\nbackend = \"numa\"\n");
  EXPECT_EQ(p.get_string("memory.tier.backend"), "numa");
  EXPECT_EQ(source_of(p, "memory.tier.backend"), path + ":2");
  p.apply_override("memory.tier.slow_read_bw=2e9");
  EXPECT_DOUBLE_EQ(p.get_real("memory.tier.slow_read_bw"), 2e9);
  EXPECT_TRUE(contains(error_of([&] { load("[memory.tier]\nbackent = \"numa\"\n"); }),
                       "unknown parameter 'memory.tier.backent'"));
}

TEST_F(ParamsTest, GettingAnUndeclaredOrDifferentlyTypedParameterThrows) {
  EXPECT_THROW(p.get_int("mesh.nyb"), std::logic_error);
  EXPECT_THROW(p.get_int("hydro.cfl"), std::logic_error);
  EXPECT_THROW(p.get_real("mesh.nxb"), std::logic_error);
}

TEST_F(ParamsTest, FileValuesReplaceDefaultsAndRecordFileAndLine) {
  load(
      "# Sod shock tube\n"
      "[mesh]\n"
      "nxb = 32\n"
      "[hydro]\n"
      "cfl = 0.4\n"
      "use_flattening = false\n"
      "riemann = \"hlle\"\n"
      "[io]\n"
      "plot_vars = [\"dens\", \"velx\", \"pres\"]\n");
  EXPECT_EQ(p.get_int("mesh.nxb"), 32);
  EXPECT_DOUBLE_EQ(p.get_real("hydro.cfl"), 0.4);
  EXPECT_FALSE(p.get_bool("hydro.use_flattening"));
  EXPECT_EQ(p.get_string("hydro.riemann"), "hlle");
  EXPECT_EQ(p.get_string_list("io.plot_vars"), (std::vector<std::string>{"dens", "velx", "pres"}));
  EXPECT_EQ(source_of(p, "mesh.nxb"), path + ":3");
  EXPECT_EQ(source_of(p, "hydro.riemann"), path + ":7");
  EXPECT_EQ(source_of(p, "io.basename"), "default");
}

TEST_F(ParamsTest, DottedKeysAreTheSameAsSections) {
  load("mesh.nxb = 8\n");
  EXPECT_EQ(p.get_int("mesh.nxb"), 8);
}

TEST_F(ParamsTest, AnIntegerIsAcceptedWhereARealIsExpected) {
  load("[hydro]\ncfl = 1\n");
  EXPECT_DOUBLE_EQ(p.get_real("hydro.cfl"), 1.0);
}

TEST_F(ParamsTest, UnknownKeyNamesFileLineAndTheClosestDeclaredKey) {
  const std::string msg = error_of([&] { load("[mesh]\n\nnxbb = 16\n"); });
  EXPECT_EQ(msg, path + ":3: unknown parameter 'mesh.nxbb' (did you mean 'mesh.nxb'?)");
}

TEST_F(ParamsTest, UnknownKeyFarFromEveryDeclaredKeyHasNoSuggestion) {
  EXPECT_EQ(error_of([&] { load("[gravity]\npoisson_solver = \"multigrid\"\n"); }),
            path + ":2: unknown parameter 'gravity.poisson_solver'");
}

TEST_F(ParamsTest, RightNameInTheWrongSectionSuggestsTheRightSection) {
  EXPECT_TRUE(contains(error_of([&] { load("[hydro]\nnxb = 16\n"); }),
                       ":2: unknown parameter 'hydro.nxb' (did you mean 'mesh.nxb'?)"));
}

TEST_F(ParamsTest, KeysOutsideAnySectionAreUnknown) {
  EXPECT_EQ(error_of([&] { load("nxb = 16\n"); }),
            path + ":1: unknown parameter 'nxb' (did you mean 'mesh.nxb'?)");
  EXPECT_TRUE(
      contains(error_of([&] { load("\"mesh.nxb\" = 16\n"); }), "unknown parameter 'mesh.nxb'"));
}

TEST_F(ParamsTest, UndeclaredGroupsDeeperTablesAndUnknownEmptySectionsAreRejected) {
  EXPECT_TRUE(contains(error_of([&] { load("[mesh.refine]\nlevels = 3\n"); }),
                       ":2: unknown parameter 'mesh.refine.levels'"));
  EXPECT_TRUE(contains(error_of([&] { load("[mesh.refine.deep]\nlevels = 3\n"); }),
                       "unknown parameter 'mesh.refine.deep'"));
  EXPECT_EQ(error_of([&] { load("[hydor]\n"); }), path + ":1: unknown section [hydor]");
}

TEST_F(ParamsTest, WrongTypeNamesExpectedAndGivenTypes) {
  EXPECT_EQ(error_of([&] { load("[mesh]\nnxb = \"16\"\n"); }),
            path + ":2: parameter 'mesh.nxb' expects an integer, got a string");
  EXPECT_EQ(error_of([&] { load("[mesh]\nnxb = 16.0\n"); }),
            path + ":2: parameter 'mesh.nxb' expects an integer, got a real");
  EXPECT_EQ(error_of([&] { load("[hydro]\nuse_flattening = 1\n"); }),
            path + ":2: parameter 'hydro.use_flattening' expects a boolean, got an integer");
  EXPECT_EQ(error_of([&] { load("[io]\nplot_vars = \"dens\"\n"); }),
            path + ":2: parameter 'io.plot_vars' expects a list of strings, got a string");
  EXPECT_EQ(error_of([&] { load("[io]\nplot_vars = [\"dens\", 3]\n"); }),
            path +
                ":2: parameter 'io.plot_vars' expects a list of strings, got an array "
                "containing an integer");
}

TEST_F(ParamsTest, OutOfRangeValueNamesTheRange) {
  EXPECT_EQ(error_of([&] { load("[hydro]\ncfl = 3\n"); }),
            path + ":2: parameter 'hydro.cfl' = 3 is out of range [0.01, 1]");
  EXPECT_EQ(error_of([&] { load("[mesh]\nnxb = 2\n"); }),
            path + ":2: parameter 'mesh.nxb' = 2 is out of range [4, 64]");
  EXPECT_TRUE(contains(error_of([&] { load("[hydro]\ncfl = nan\n"); }), "out of range"));
}

TEST_F(ParamsTest, StringOutsideItsChoicesListsTheChoices) {
  EXPECT_EQ(error_of([&] { load("[hydro]\nriemann = \"hllx\"\n"); }),
            path + ":2: parameter 'hydro.riemann' = \"hllx\" is not one of hllc, hlle");
}

TEST_F(ParamsTest, StringWithoutChoicesTakesAnyValue) {
  load("[io]\nbasename = \"sod_2d\"\n");
  EXPECT_EQ(p.get_string("io.basename"), "sod_2d");
}

TEST_F(ParamsTest, TomlSyntaxErrorIsOneLineWithFileAndLine) {
  const std::string msg = error_of([&] { load("[mesh]\nnxb = 16\nnxb = = 3\n"); });
  EXPECT_EQ(msg.rfind(path + ":3: ", 0), 0u) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

TEST_F(ParamsTest, MissingFileSaysSoInOneLine) {
  EXPECT_EQ(error_of([&] { p.load_file(path + ".absent"); }),
            "cannot open parameter file '" + path + ".absent': No such file or directory");
}

TEST_F(ParamsTest, OverridesAreParsedByDeclaredTypeAndRecordTheCommandLine) {
  p.apply_override("mesh.nxb=32");
  p.apply_override("hydro.cfl = 0.5");
  p.apply_override("hydro.riemann=\"hlle\"");
  p.apply_override("io.basename='sod'");
  EXPECT_EQ(p.get_int("mesh.nxb"), 32);
  EXPECT_DOUBLE_EQ(p.get_real("hydro.cfl"), 0.5);
  EXPECT_EQ(p.get_string("hydro.riemann"), "hlle");
  EXPECT_EQ(p.get_string("io.basename"), "sod");
  for (const char* key : {"mesh.nxb", "hydro.cfl", "hydro.riemann", "io.basename"})
    EXPECT_EQ(source_of(p, key), "command line") << key;
  EXPECT_EQ(source_of(p, "io.plot_vars"), "default");
}

TEST_F(ParamsTest, BooleanOverridesAcceptTrueFalseOneZeroYesNo) {
  const std::vector<std::pair<std::string, bool>> cases{
      {"true", true}, {"1", true}, {"yes", true}, {"false", false}, {"0", false}, {"no", false}};
  for (const auto& [text, expected] : cases) {
    p.apply_override("hydro.use_flattening=" + text);
    EXPECT_EQ(p.get_bool("hydro.use_flattening"), expected) << text;
  }
  EXPECT_EQ(error_of([&] { p.apply_override("hydro.use_flattening=maybe"); }),
            "command line: parameter 'hydro.use_flattening' expects a boolean, got 'maybe'");
}

TEST_F(ParamsTest, ListOverridesAcceptBareOrBracketedQuotedItems) {
  const std::vector<std::string> expected{"dens", "velx", "pres"};
  p.apply_override("io.plot_vars=dens,velx,pres");
  EXPECT_EQ(p.get_string_list("io.plot_vars"), expected);
  p.apply_override("io.plot_vars=[\"dens\", 'velx' , pres]");
  EXPECT_EQ(p.get_string_list("io.plot_vars"), expected);
  p.apply_override("io.plot_vars=[]");
  EXPECT_TRUE(p.get_string_list("io.plot_vars").empty());
}

TEST_F(ParamsTest, BadOverridesFailLikeFileValuesButNameTheCommandLine) {
  EXPECT_EQ(error_of([&] { p.apply_override("mesh.nxb"); }),
            "command line: expected section.key=value, got 'mesh.nxb'");
  EXPECT_EQ(error_of([&] { p.apply_override("mesh.nbx=8"); }),
            "command line: unknown parameter 'mesh.nbx' (did you mean 'mesh.nxb'?)");
  EXPECT_EQ(error_of([&] { p.apply_override("mesh.nxb=16.5"); }),
            "command line: parameter 'mesh.nxb' expects an integer, got '16.5'");
  EXPECT_EQ(error_of([&] { p.apply_override("hydro.cfl=fast"); }),
            "command line: parameter 'hydro.cfl' expects a real, got 'fast'");
  EXPECT_EQ(error_of([&] { p.apply_override("hydro.cfl=1.5"); }),
            "command line: parameter 'hydro.cfl' = 1.5 is out of range [0.01, 1]");
  EXPECT_EQ(error_of([&] { p.apply_override("hydro.riemann=roe"); }),
            "command line: parameter 'hydro.riemann' = \"roe\" is not one of hllc, hlle");
}

TEST_F(ParamsTest, SetFromCodeIsValidatedAndRecordsItsSource) {
  p.set("hydro.cfl", std::int64_t{1}, "restart");
  EXPECT_DOUBLE_EQ(p.get_real("hydro.cfl"), 1.0);
  EXPECT_EQ(source_of(p, "hydro.cfl"), "restart");
  EXPECT_EQ(error_of([&] { p.set("mesh.nxb", 8.0, "restart"); }),
            "restart: parameter 'mesh.nxb' expects an integer, got a real");
  EXPECT_EQ(error_of([&] { p.set("mesh.nxb", std::int64_t{128}, "restart"); }),
            "restart: parameter 'mesh.nxb' = 128 is out of range [4, 64]");
}

TEST_F(ParamsTest, ClosestKeyToleratesSmallTyposOnly) {
  EXPECT_EQ(p.closest_key("mesh.nxbb"), "mesh.nxb");
  EXPECT_EQ(p.closest_key("hydro.rieman"), "hydro.riemann");
  EXPECT_EQ(p.closest_key("hydro.use_flatening"), "hydro.use_flattening");
  EXPECT_EQ(p.closest_key("riemann"), "hydro.riemann");
  EXPECT_EQ(p.closest_key("gravity.poisson_solver"), "");
}

TEST_F(ParamsTest, JsonKeepsEachValueItsType) {
  const nlohmann::json j = p.to_json();
  EXPECT_EQ(j.size(), p.all().size());
  EXPECT_TRUE(j["mesh.nxb"].is_number_integer());
  EXPECT_TRUE(j["hydro.cfl"].is_number_float());
  EXPECT_TRUE(j["hydro.use_flattening"].is_boolean());
  EXPECT_EQ(j["hydro.riemann"], "hllc");
  EXPECT_EQ(j["io.plot_vars"], nlohmann::json::array({"dens", "pres"}));
}

TEST_F(ParamsTest, ReferenceListsEverySectionKeyTypeRangeAndDoc) {
  std::ostringstream os;
  p.print_reference(os);
  const std::string ref = os.str();
  for (const char* part : {"[hydro]", "[io]", "[mesh]", "nxb", "int", "[4, 64]",
                           "zones per block along each axis", "{hllc, hlle}", "0.8"})
    EXPECT_TRUE(contains(ref, part));
}

TEST_F(ParamsTest, InEffectListingShowsValueAndSource) {
  p.apply_override("mesh.nxb=32");
  std::ostringstream os;
  p.print_in_effect(os);
  std::istringstream lines(os.str());
  int n = 0;
  for (std::string line; std::getline(lines, line); ++n) {
    if (line.rfind("mesh.nxb ", 0) == 0) {
      EXPECT_TRUE(contains(line, "= 32 "));
      EXPECT_TRUE(contains(line, "(command line)"));
    }
    if (line.rfind("hydro.riemann ", 0) == 0) {
      EXPECT_TRUE(contains(line, "\"hllc\""));
    }
  }
  EXPECT_EQ(n, static_cast<int>(p.all().size()));
}

}  // namespace
}  // namespace tessera::base
