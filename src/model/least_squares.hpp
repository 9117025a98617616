// Small least-squares fits for the model: few unknowns (at most 4), data of
// very different sizes (steps, bytes), relative residuals, coefficients that
// cannot be negative (a time per step or per byte).
#pragma once

#include <vector>

namespace gpuscale {

struct LsqFit {
  std::vector<double> coef;  // one per column; 0 where the column was dropped
  std::vector<bool> used;    // the columns the fit kept
  bool ok = false;           // false: no column could be fitted
};

// Minimizes sum_i ((x_i . coef - y_i) / y_i)^2 with coef >= 0 over the columns
// marked usable (the others stay 0). A column whose coefficient comes out
// negative, or that the data cannot tell from the others (a singular system),
// is dropped, the first of `drop_order` first, and the rest fitted again.
LsqFit relative_nonneg_lsq(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                           std::vector<bool> usable, const std::vector<int>& drop_order);

// The relative residuals' root mean square of a fit.
double relative_rms(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                    const std::vector<double>& coef);

}  // namespace gpuscale
