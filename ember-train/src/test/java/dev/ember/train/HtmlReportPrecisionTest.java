package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.train.report.HtmlReport;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.w3c.dom.Document;
import org.w3c.dom.Element;

/** The report of a run that scales its loss: the precision, a loss-scale curve and the skipped steps. */
class HtmlReportPrecisionTest {
  @TempDir Path dir;

  @Test
  void lossScaleIsACurveAndSkippedStepsAreSummed() throws Exception {
    Files.writeString(dir.resolve("metrics.csv"), """
        epoch,step,time_s,loss,skipped_steps,loss_scale,lr
        1,97,1.0,0.9,3,8192,0.001
        2,200,2.0,0.5,,16384,0.001
        3,299,3.0,0.4,1,16384,0.001
        """);
    Map<String, String> info = new LinkedHashMap<>();
    info.put("precision", "fp16 (autocast, loss scaling: final scale 16384, 4 skipped steps)");
    Path html = HtmlReport.write(dir, info);
    String page = Files.readString(html);
    assertTrue(page.contains("<td>precision</td><td>fp16 (autocast, loss scaling: final scale 16384, 4 skipped steps)</td>"),
        "the run table names the precision");
    assertTrue(page.contains("<td>skipped steps</td><td>4</td>"), "the summary sums the skipped steps");
    assertTrue(page.contains("<td>loss scale</td><td>final 16384</td>"), "the summary gives the final scale");
    Document doc = HtmlReportTest.parse(html);
    List<String> titles = HtmlReportTest.elements(doc, "svg").stream().map(e -> e.getAttribute("data-title"))
        .filter(t -> !t.isEmpty()).toList();
    assertEquals(List.of("loss", "learning rate", "loss scale", "skipped steps per epoch"), titles);
    Element scale = HtmlReportTest.series(doc, "loss_scale");
    double[][] pts = HtmlReportTest.points(scale);
    assertEquals(3, pts.length, "one point per epoch");
    assertTrue(pts[0][1] > pts[1][1] && pts[1][1] == pts[2][1], "the scale doubles, then holds (SVG y grows downwards)");
  }
}
