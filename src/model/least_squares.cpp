#include "model/least_squares.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

namespace gpuscale {

namespace {

// Solves a * z = b (n x n) by Gaussian elimination with partial pivoting; none when singular.
std::optional<std::vector<double>> solve(std::vector<std::vector<double>> a, std::vector<double> b) {
  const std::size_t n = b.size();
  for (std::size_t col = 0; col < n; ++col) {
    std::size_t pivot = col;
    for (std::size_t r = col + 1; r < n; ++r) {
      if (std::fabs(a[r][col]) > std::fabs(a[pivot][col])) pivot = r;
    }
    if (std::fabs(a[pivot][col]) < 1e-10) return std::nullopt;  // columns are scaled to at most 1
    std::swap(a[pivot], a[col]);
    std::swap(b[pivot], b[col]);
    for (std::size_t r = col + 1; r < n; ++r) {
      const double f = a[r][col] / a[col][col];
      for (std::size_t k = col; k < n; ++k) a[r][k] -= f * a[col][k];
      b[r] -= f * b[col];
    }
  }
  std::vector<double> z(n);
  for (std::size_t i = n; i-- > 0;) {
    double s = b[i];
    for (std::size_t k = i + 1; k < n; ++k) s -= a[i][k] * z[k];
    z[i] = s / a[i][i];
  }
  return z;
}

// The unconstrained fit over the columns `cols`, each scaled to at most 1 so that steps and bytes weigh alike.
std::optional<std::vector<double>> fit_columns(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                                               const std::vector<std::size_t>& cols) {
  const std::size_t p = cols.size();
  std::vector<double> scale(p, 0.0);
  for (std::size_t i = 0; i < y.size(); ++i) {
    for (std::size_t j = 0; j < p; ++j) scale[j] = std::max(scale[j], std::fabs(x[i][cols[j]] / y[i]));
  }
  std::vector<std::vector<double>> a(p, std::vector<double>(p, 0.0));
  std::vector<double> b(p, 0.0);
  for (std::size_t i = 0; i < y.size(); ++i) {  // rows weighted by 1 / y: relative residuals
    for (std::size_t j = 0; j < p; ++j) {
      const double xj = x[i][cols[j]] / y[i] / scale[j];
      b[j] += xj;
      for (std::size_t k = 0; k < p; ++k) a[j][k] += xj * x[i][cols[k]] / y[i] / scale[k];
    }
  }
  auto z = solve(a, b);
  if (!z) return std::nullopt;
  for (std::size_t j = 0; j < p; ++j) (*z)[j] /= scale[j];
  return z;
}

}  // namespace

namespace {

// The column to drop after a fit over `cols` gave `z` (none: singular), -1 when none can go.
int column_to_drop(const std::optional<std::vector<double>>& z, const std::vector<std::size_t>& cols,
                   const std::vector<bool>& usable, const std::vector<int>& drop_order,
                   const std::vector<int>& drop_for) {
  if (z) {
    for (std::size_t j = 0; j < cols.size(); ++j) {
      if ((*z)[j] >= 0) continue;
      const int partner = drop_for[cols[j]];
      return usable[static_cast<std::size_t>(partner)] ? partner : static_cast<int>(cols[j]);
    }
  }
  for (int d : drop_order) {
    if (usable[static_cast<std::size_t>(d)]) return d;
  }
  return -1;
}

}  // namespace

LsqFit relative_nonneg_lsq(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                           std::vector<bool> usable, const std::vector<int>& drop_order,
                           const std::vector<int>& drop_for) {
  LsqFit fit;
  while (true) {
    std::vector<std::size_t> cols;
    for (std::size_t j = 0; j < usable.size(); ++j) {
      if (usable[j]) cols.push_back(j);
    }
    if (cols.empty() || y.empty()) return fit;
    const auto z = cols.size() <= y.size() ? fit_columns(x, y, cols) : std::nullopt;
    if (z && std::all_of(z->begin(), z->end(), [](double v) { return v >= 0; })) {
      fit.coef.assign(usable.size(), 0.0);
      for (std::size_t j = 0; j < cols.size(); ++j) fit.coef[cols[j]] = (*z)[j];
      fit.used = usable;
      fit.ok = true;
      return fit;
    }
    const int drop = column_to_drop(z, cols, usable, drop_order, drop_for);
    if (drop < 0) return fit;
    usable[static_cast<std::size_t>(drop)] = false;
  }
}

std::optional<std::vector<std::vector<double>>> relative_unscaled_cov(const std::vector<std::vector<double>>& x,
                                                                      const std::vector<double>& y,
                                                                      const std::vector<bool>& used) {
  std::vector<std::size_t> cols;
  for (std::size_t j = 0; j < used.size(); ++j) {
    if (used[j]) cols.push_back(j);
  }
  const std::size_t p = cols.size();
  if (p == 0 || y.size() < p) return std::nullopt;
  std::vector<double> scale(p, 0.0);  // each column to at most 1, as the fit does: steps and bytes weigh alike
  for (std::size_t i = 0; i < y.size(); ++i) {
    for (std::size_t j = 0; j < p; ++j) scale[j] = std::max(scale[j], std::fabs(x[i][cols[j]] / y[i]));
  }
  if (std::any_of(scale.begin(), scale.end(), [](double v) { return !(v > 0); })) return std::nullopt;
  std::vector<std::vector<double>> a(p, std::vector<double>(p, 0.0));
  for (std::size_t i = 0; i < y.size(); ++i) {
    for (std::size_t j = 0; j < p; ++j) {
      for (std::size_t k = 0; k < p; ++k) a[j][k] += x[i][cols[j]] / y[i] / scale[j] * x[i][cols[k]] / y[i] / scale[k];
    }
  }
  std::vector<std::vector<double>> out(used.size(), std::vector<double>(used.size(), 0.0));
  for (std::size_t k = 0; k < p; ++k) {  // column k of the inverse
    std::vector<double> unit(p, 0.0);
    unit[k] = 1.0;
    const auto z = solve(a, unit);
    if (!z) return std::nullopt;
    for (std::size_t j = 0; j < p; ++j) out[cols[j]][cols[k]] = (*z)[j] / scale[j] / scale[k];
  }
  return out;
}

double t_quantile_975(int freedom) {
  static const double table[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                 2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                 2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  const int n = static_cast<int>(sizeof(table) / sizeof(table[0]));
  if (freedom < 1) return INFINITY;
  if (freedom <= n) return table[freedom - 1];
  // Beyond the table, the Cornish-Fisher expansion about the normal quantile (within 0.001 from 30 on).
  const double z = 1.959964, v = freedom;
  return z + (z * z * z + z) / (4 * v) + (5 * std::pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * v * v);
}

double relative_rms(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                    const std::vector<double>& coef) {
  if (y.empty()) return 0.0;
  double s = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    double p = 0;
    for (std::size_t j = 0; j < coef.size(); ++j) p += x[i][j] * coef[j];
    s += std::pow((p - y[i]) / y[i], 2);
  }
  return std::sqrt(s / static_cast<double>(y.size()));
}

}  // namespace gpuscale
