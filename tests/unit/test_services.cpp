// Specification of how units find each other (issue 45): by the services their
// registrations provide and need (physics/registry.hpp, physics::Services), checked when a
// run's units are built and handed over at bind, never by a unit's type.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.hpp"
#include "base/params.hpp"
#include "driver/simulation.hpp"
#include "driver/units.hpp"
#include "physics/eos/eos_unit.hpp"
#include "physics/flow/flow.hpp"
#include "physics/gravity/gravity.hpp"

namespace tessera::physics {
namespace {

base::Params params(const std::vector<std::string>& o) {
  base::Params p;
  driver::declare_all_params(p);
  for (const auto& x : o) p.apply_override(x);
  return p;
}

std::string error_of(const std::vector<std::string>& operators) {
  try {
    driver::check_operators(operators);
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

// Given hydro alone, then the services it needs come after it (composition, eos), its
// Services give the EOS as its type, no gravity (optional, absent), and refuse a service
// it did not declare.
TEST(UnitServices, GivenHydroAlone_ThenItGetsTheEosAndNoGravity) {
  const auto p = params({"driver.operators=[\"hydro\"]"});
  const auto units = driver::make_units(p);
  std::vector<std::string> names;
  for (const auto& u : units.all()) names.push_back(u->name());
  EXPECT_EQ(names, (std::vector<std::string>{"hydro", "composition", "eos"}));
  const Unit& hydro = *units.find("hydro");
  const Services s = driver::services_for(units, hydro);
  EXPECT_EQ(s.get<eos::EosUnit>("eos"), units.find("eos"));
  EXPECT_EQ(s.get<gravity::Gravity>("gravity"), nullptr);
  EXPECT_THROW(s.get<flow::Flow>("velocity"), Error);  // not in hydro's needs
  EXPECT_EQ(units.provides(*units.find("eos")), std::vector<std::string>{"eos"});
}

// Given the level set alone, then no service unit is added (it needs the velocity
// optionally, which no unit of the run provides), and with the flow it gets the flow's.
TEST(UnitServices, GivenTheLevelSet_ThenTheVelocityIsTheFlowsWhereTheRunHasIt) {
  auto units = driver::make_units(params({"driver.operators=[\"levelset\"]"}));
  ASSERT_EQ(units.all().size(), 1u);
  EXPECT_EQ(driver::services_for(units, *units.all()[0]).get<flow::Flow>("velocity"), nullptr);
  units = driver::make_units(params({"driver.operators=[\"flow\", \"levelset\"]"}));
  const Unit& ls = *units.find("levelset");
  EXPECT_EQ(driver::services_for(units, ls).get<flow::Flow>("velocity"), units.find("flow"));
}

// Given a unit that needs a service nobody provides, or a service with two providers, then
// the run is refused with one line naming the service.
TEST(UnitServices, GivenAMissingOrDoubledService_ThenTheRunIsRefused) {
  Registration needy = registration_of<flow::Flow>(
      "needy", UnitRole::operator_unit, "needs a service nobody provides",
      {.needs = {{"nothing_provides_this", false, "a test"}}});
  needy.declare_params = nullptr;
  driver::add_unit(needy);
  const std::string e = error_of({"needy"});
  EXPECT_NE(e.find("'needy' needs the service 'nothing_provides_this'"), std::string::npos) << e;
  EXPECT_THROW(driver::add_unit(needy), Error);  // a name registered already
  Registration twin = registration_of<flow::Flow>("twin_velocity", UnitRole::operator_unit,
                                                  "a second velocity", {}, {"velocity"});
  twin.declare_params = nullptr;
  driver::add_unit(twin);
  const std::string d = error_of({"flow", "twin_velocity", "levelset"});
  EXPECT_NE(d.find("the service 'velocity' has two providers"), std::string::npos) << d;
  EXPECT_EQ(error_of({"flow", "levelset"}), "");
}

}  // namespace
}  // namespace tessera::physics
