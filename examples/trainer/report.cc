#include "report.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

namespace trainer {

Report::Report(bool active, const std::string& csv_path, const std::string& plot_path)
    : active_(active), tty_(active && isatty(STDOUT_FILENO)), csv_path_(csv_path), plot_path_(plot_path) {
  if (!active_) return;
  if (csv_path_.empty() && !plot_path_.empty()) csv_path_ = plot_path_ + ".csv";
  if (csv_path_.empty()) return;
  csv_ = std::fopen(csv_path_.c_str(), "w");
  if (!csv_) throw std::runtime_error(fmt::format("cannot write the CSV log {}", csv_path_));
  // A line at a time: a rank killed mid-run (--elastic loses rank 0 too) keeps what it logged.
  std::setvbuf(csv_, nullptr, _IOLBF, 0);
  std::fprintf(csv_,
               "kind,epoch,global_step,epochs_done,loss,samples_per_s,comm_wait_pct,test_loss,test_accuracy,train_"
               "seconds,sent_bytes\n");
}

Report::~Report() {
  if (csv_) std::fclose(csv_);
}

void Report::clear_bar() {
  if (bar_shown_) std::fputs("\r\033[K", stdout);
  bar_shown_ = false;
}

void Report::line(const std::string& text) {
  if (!active_) return;
  clear_bar();
  std::fputs((text + "\n").c_str(), stdout);
  std::fflush(stdout);
}

void Report::progress(int64_t epoch, int64_t step, int64_t steps_per_epoch) {
  if (!tty_) return;
  constexpr int kWidth = 30;
  int filled = static_cast<int>(kWidth * (step + 1) / steps_per_epoch);
  std::fputs(fmt::format("\r[{:=<{}}{: <{}}] epoch {} {}/{} loss {:.4f}", "", filled, "", kWidth - filled, epoch + 1,
                         step + 1, steps_per_epoch, last_loss_)
                 .c_str(),
             stdout);
  std::fflush(stdout);
  bar_shown_ = true;
}

void Report::step(const StepStats& s) {
  last_loss_ = s.loss;
  line(fmt::format("epoch {}/{} step {}/{} loss {:.4f} throughput {:.0f} samples/s comm wait {:.1f}%", s.epoch + 1,
                   s.epochs, s.step + 1, s.steps_per_epoch, s.loss, s.samples_per_s, s.comm_wait_pct));
  if (csv_)
    std::fprintf(
        csv_, "step,%lld,%lld,%.4f,%.6f,%.1f,%.2f,,,,\n", static_cast<long long>(s.epoch + 1),
        static_cast<long long>(s.global_step),
        static_cast<double>(s.epoch) + static_cast<double>(s.step + 1) / static_cast<double>(s.steps_per_epoch), s.loss,
        s.samples_per_s, s.comm_wait_pct);
}

void Report::epoch(int64_t epoch, double test_loss, double test_acc, double seconds, double train_seconds,
                   double sent_bytes) {
  line(fmt::format("epoch {} done in {:.1f} s: test loss {:.4f} test accuracy {:.2f}%", epoch + 1, seconds, test_loss,
                   100 * test_acc));
  if (csv_)
    std::fprintf(csv_, "epoch,%lld,,%lld,,,,%.6f,%.4f,%.4f,%.0f\n", static_cast<long long>(epoch + 1),
                 static_cast<long long>(epoch + 1), test_loss, 100 * test_acc, train_seconds, sent_bytes);
}

void Report::finish() {
  if (!active_ || !csv_) return;
  std::fclose(csv_);
  csv_ = nullptr;
  if (plot_path_.empty()) return;
  // Loss per logged step (left axis) and test accuracy per epoch (right axis) against epochs.
  std::string script = fmt::format(
      "set terminal pngcairo size 900,500 noenhanced; set output '{0}';"
      "set datafile separator ','; set xlabel 'epoch'; set grid;"
      "set ylabel 'training loss'; set y2label 'test accuracy (%)'; set y2tics; set ytics nomirror;"
      "plot '{1}' every ::1 using 4:(strcol(1) eq 'step' ? $5 : NaN) with lines title 'training loss',"
      " '{1}' every ::1 using 4:(strcol(1) eq 'epoch' ? $9 : NaN) axes x1y2 with linespoints"
      " title 'test accuracy'",
      plot_path_, csv_path_);
  pid_t pid = fork();
  if (pid == 0) {
    execlp("gnuplot", "gnuplot", "-e", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  if (pid > 0) waitpid(pid, &status, 0);
  if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    line(fmt::format("warning: could not draw {} (is gnuplot installed?); the data is in {}", plot_path_, csv_path_));
  else
    line(fmt::format("plot written to {}", plot_path_));
}

}  // namespace trainer
