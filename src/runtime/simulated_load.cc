#include "graft/runtime/simulated_load.h"

namespace graft::runtime {

std::shared_ptr<CoreAvailability> simulated_load(int cores, double busy_elsewhere) {
  auto seconds = std::make_shared<double>(0.0);
  CoreAvailability::Reader reader = [=]() -> std::optional<CpuTimes> {
    *seconds += 1.0;
    CpuTimes t;
    t.wall = *seconds;
    t.cores_busy = *seconds * busy_elsewhere;
    t.own_waiting = busy_elsewhere >= 0.5 ? *seconds * 0.5 : 0.0;
    t.cores = cores;
    return t;
  };
  return std::make_shared<CoreAvailability>(std::chrono::milliseconds(0), 0.1, std::move(reader));
}

}  // namespace graft::runtime
