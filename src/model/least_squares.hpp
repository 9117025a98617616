// Small least-squares fits for the model: few unknowns (at most 4), data of
// very different sizes (steps, bytes), relative residuals, coefficients that
// cannot be negative (a time per step or per byte).
#pragma once

#include <optional>
#include <vector>

namespace gpuscale {

struct LsqFit {
  std::vector<double> coef;  // one per column; 0 where the column was dropped
  std::vector<bool> used;    // the columns the fit kept
  bool ok = false;           // false: no column could be fitted
};

// Minimizes sum_i ((x_i . coef - y_i) / y_i)^2 with coef >= 0 over the columns
// marked usable (the others stay 0), dropping columns and fitting the rest
// again until none is negative: where column j comes out negative, column
// drop_for[j] goes (a latency rather than its bandwidth: noise at small sizes
// must not cost the term that matters at large ones), or j itself once that
// one is gone. Where the data cannot tell the columns apart (a singular
// system), the first column of `drop_order` still in use goes.
LsqFit relative_nonneg_lsq(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                           std::vector<bool> usable, const std::vector<int>& drop_order,
                           const std::vector<int>& drop_for);

// The relative residuals' root mean square of a fit.
double relative_rms(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                    const std::vector<double>& coef);

// (A^T A)^-1 where A's rows are x_i / y_i over the columns `used` (R's cov.unscaled of the relative fit), as a
// full matrix with 0 in the rows and columns not used; none where A^T A is singular.
std::optional<std::vector<std::vector<double>>> relative_unscaled_cov(const std::vector<std::vector<double>>& x,
                                                                      const std::vector<double>& y,
                                                                      const std::vector<bool>& used);

// Student's t quantile 0.975 for `freedom` degrees of freedom (1 or more): a 95% interval's half-width in
// standard errors where the spread itself was estimated from `freedom` residuals.
double t_quantile_975(int freedom);

}  // namespace gpuscale
