// Devices of one SKU do not run equally fast: power management and manufacturing variation give
// each GPU its own sustained clock (Sinha et al., "Not All GPUs Are Created Equal", SC'22:
// 8% average performance variation across the GPUs of a cluster, outliers aside, for every
// application, cluster, vendor and cooling method they measured). A synchronous job runs at the
// pace of its slowest device: every TP collective waits for its slowest member, a pipeline for
// its slowest stage, the data-parallel reduction for its slowest replica. Pure functions.
#pragma once

#include "hardware_models/src/hardware_model.h"

namespace stratasim {

// x with Phi(x) = p for the standard normal CDF Phi, p in (0, 1).
double inverse_normal_cdf(double p);

// E[max of n independent standard normals], by Blom's (1958) plotting position
// Phi^-1((n - 0.375) / (n + 0.25)): 0 for n = 1, 0.59 for n = 2 (exactly 1/sqrt(pi) = 0.564),
// 3.2 for n = 1024. Within 5% of the exact value for n >= 2.
double expected_max_standard_normal(int n);

// Compute time factor of the slowest of the job's devices against a typical one:
// 1 + sigma * E[max of n], sigma = DeviceSpec::speed_variability, n = hw.num_devices.
double slowest_device_factor(const HardwareModel& hw);

}  // namespace stratasim
