/**
 * The run folder as a person reads it. {@link dev.ember.train.report.HtmlReport} turns the files a
 * fit leaves ({@code metrics.csv} from {@code CsvLogger}, {@code profile.json} from
 * {@code Profiling}, {@code histograms.jsonl} from {@code HistogramLogger},
 * {@code confusion_matrix.json}) into one self-contained {@code report.html}:
 * <pre>{@code
 * Path run = Path.of("runs/fashion");
 * Trainer.builder().maxEpochs(10)
 *     .callbacks(new CsvLogger(run.resolve("metrics.csv")), new Profiling(run.resolve("profile.json")),
 *         HistogramLogger.perEpoch(run.resolve("histograms.jsonl"), 30), ProgressBar.auto())
 *     .build().fit(model, F::crossEntropy, optimizer, train, val);
 * HtmlReport.write(run, Map.of("model", "lenet5", "test accuracy", "0.8874"));
 * }</pre>
 * The small readers and writers the run files share: {@link dev.ember.nn.io.Json} (the one JSON reader and writer),
 * {@link dev.ember.train.report.CsvTable}, {@link dev.ember.nn.io.AtomicFiles}; a malformed run
 * file raises {@link dev.ember.train.report.RunFileException} naming the file and the byte offset.
 */
package dev.ember.train.report;
