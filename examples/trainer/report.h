// What rank 0 prints: periodic lines, a progress bar on a terminal, an optional CSV log and a
// PNG plot of the curves (drawn by gnuplot when it is installed).
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

namespace trainer {

struct StepStats {
  int64_t epoch, epochs, step, steps_per_epoch, global_step;
  double loss;           // mean over the interval's samples, all ranks
  double samples_per_s;  // global
  double comm_wait_pct;  // share of wall time spent waiting for gradients
};

class Report {
 public:
  Report(bool active, const std::string& csv_path, const std::string& plot_path);
  ~Report();
  void progress(int64_t epoch, int64_t step, int64_t steps_per_epoch);
  void step(const StepStats& s);
  // train_seconds and sent_bytes: totals so far (training time without evaluation, and what one
  // rank sent), for time- and bytes-to-accuracy curves.
  void epoch(int64_t epoch, double test_loss, double test_acc, double seconds, double train_seconds = 0,
             double sent_bytes = 0);
  void line(const std::string& text);  // a plain line (clears the bar first)
  void finish();                       // closes the CSV and draws the plot
  // The rank that prints died (--elastic): this one prints the lines from now on (the CSV and
  // plot were the lost rank's).
  void take_over() { active_ = true; }

 private:
  void clear_bar();
  bool active_, tty_, bar_shown_ = false;
  std::string csv_path_, plot_path_;
  FILE* csv_ = nullptr;
  double last_loss_ = 0;
};

}  // namespace trainer
