//===- Layout.cpp - Group and rank-order names ----------------------------===//

#include "ratrain/runtime/Layout.h"

#include "llvm/ADT/StringSwitch.h"

using namespace ratrain::rt;

llvm::StringRef ratrain::rt::stringifyGroup(Group group) {
  switch (group) {
  case Group::World:
    return "world";
  case Group::Pipeline:
    return "pipeline";
  case Group::Data:
    return "data";
  case Group::DataNodeLocal:
    return "data.node";
  case Group::DataCrossNode:
    return "data.cross";
  case Group::NodeLocal:
    return "node";
  case Group::DataInside0:
    return "data.inside0";
  case Group::DataInside1:
    return "data.inside1";
  case Group::DataInside2:
    return "data.inside2";
  case Group::DataInside3:
    return "data.inside3";
  case Group::DataAcross0:
    return "data.across0";
  case Group::DataAcross1:
    return "data.across1";
  case Group::DataAcross2:
    return "data.across2";
  case Group::DataAcross3:
    return "data.across3";
  }
  return "?";
}

llvm::StringRef ratrain::rt::stringifyRankOrder(RankOrder order) {
  return order == RankOrder::StageMajor ? "stage-major" : "replica-major";
}

std::optional<RankOrder> ratrain::rt::parseRankOrder(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<RankOrder>>(name)
      .Case("stage-major", RankOrder::StageMajor)
      .Case("replica-major", RankOrder::ReplicaMajor)
      .Default(std::nullopt);
}

std::optional<Group> ratrain::rt::parseGroup(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Group>>(name)
      .Case("world", Group::World)
      .Cases({"pipeline", "pp"}, Group::Pipeline)
      .Cases({"data", "dp"}, Group::Data)
      .Case("data.node", Group::DataNodeLocal)
      .Case("data.cross", Group::DataCrossNode)
      .Case("node", Group::NodeLocal)
      .Case("data.inside0", Group::DataInside0)
      .Case("data.inside1", Group::DataInside1)
      .Case("data.inside2", Group::DataInside2)
      .Case("data.inside3", Group::DataInside3)
      .Case("data.across0", Group::DataAcross0)
      .Case("data.across1", Group::DataAcross1)
      .Case("data.across2", Group::DataAcross2)
      .Case("data.across3", Group::DataAcross3)
      .Default(std::nullopt);
}
