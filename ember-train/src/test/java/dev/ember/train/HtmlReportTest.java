package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.train.report.HtmlReport;
import dev.ember.train.report.RunFileException;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

class HtmlReportTest {
  @TempDir Path dir;

  /** Parses the page as XML: the report is written well-formed (every element closed, attributes quoted). */
  static Document parse(Path html) throws Exception {
    DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
    f.setFeature("http://apache.org/xml/features/nonvalidating/load-external-dtd", false);
    f.setExpandEntityReferences(false);
    return f.newDocumentBuilder().parse(new ByteArrayInputStream(Files.readAllBytes(html)));
  }

  static List<Element> elements(Document doc, String tag) {
    NodeList nl = doc.getElementsByTagName(tag);
    List<Element> out = new ArrayList<>();
    for (int i = 0; i < nl.getLength(); i++) out.add((Element) nl.item(i));
    return out;
  }

  static Element series(Document doc, String name) {
    return elements(doc, "polyline").stream().filter(p -> name.equals(p.getAttribute("data-series"))).findFirst()
        .orElseThrow(() -> new AssertionError("no polyline for " + name));
  }

  static double[][] points(Element polyline) {
    String[] pts = polyline.getAttribute("points").trim().split("\\s+");
    double[][] out = new double[pts.length][];
    for (int i = 0; i < pts.length; i++) {
      String[] xy = pts[i].split(",");
      out[i] = new double[] {Double.parseDouble(xy[0]), Double.parseDouble(xy[1])};
    }
    return out;
  }

  @Test
  void aFullRunFolderBecomesAWellFormedSelfContainedPage() throws Exception {
    SampleRun.write(dir);
    Path out = HtmlReport.write(dir, SampleRun.info());
    assertEquals(dir.resolve("report.html"), out);
    String html = Files.readString(out);
    Document doc = parse(out);

    // self-contained: no script, no external resource
    assertTrue(elements(doc, "script").isEmpty());
    assertTrue(elements(doc, "link").isEmpty());
    assertFalse(html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "").contains("http"), "no URL besides the SVG namespace");
    assertTrue(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; more"), "run info is escaped");

    // charts: loss and accuracy with train and val curves, one point per epoch that has the value
    double[][] loss = points(series(doc, "loss"));
    double[][] valLoss = points(series(doc, "val_loss"));
    assertEquals(SampleRun.EPOCHS, loss.length);
    assertEquals(SampleRun.EPOCHS - 1, valLoss.length, "epoch 1 had no validation");
    assertEquals(SampleRun.EPOCHS, points(series(doc, "accuracy")).length);
    assertEquals(SampleRun.EPOCHS - 1, points(series(doc, "val_accuracy")).length);
    assertEquals(SampleRun.EPOCHS, points(series(doc, "lr")).length);
    assertEquals(SampleRun.EPOCHS, points(series(doc, "epoch_time_s")).length);
    // epochs go left to right; the falling loss goes down the page (SVG y grows downwards)
    for (int i = 1; i < loss.length; i++) {
      assertTrue(loss[i][0] > loss[i - 1][0]);
      assertTrue(loss[i][1] > loss[i - 1][1], "loss falls every epoch");
    }
    assertEquals(loss[1][0], valLoss[0][0], 1e-9, "val_loss of epoch 2 sits above epoch 2");
    assertEquals(HtmlReport.TRAIN_COLOR, series(doc, "loss").getAttribute("stroke"));
    assertEquals(HtmlReport.VAL_COLOR, series(doc, "val_loss").getAttribute("stroke"));
    // axes: tick labels and a legend naming each series
    Element lossChart = elements(doc, "svg").stream().filter(s -> "loss".equals(s.getAttribute("data-title"))).findFirst().orElseThrow();
    List<String> texts = new ArrayList<>();
    NodeList nl = lossChart.getElementsByTagName("text");
    for (int i = 0; i < nl.getLength(); i++) texts.add(nl.item(i).getTextContent());
    assertTrue(texts.containsAll(List.of("loss", "val_loss", "epoch", "1", "8")), texts.toString());
    assertTrue(texts.size() >= 12, "title, legend, axis labels and at least 4 ticks per axis: " + texts);

    // confusion matrix: 10 x 10 shaded cells plus recall
    Element cm = elements(doc, "table").stream().filter(t -> "cm".equals(t.getAttribute("class"))).findFirst().orElseThrow();
    NodeList cells = cm.getElementsByTagName("td");
    assertEquals(10 * 11, cells.getLength());
    assertTrue(((Element) cells.item(0)).getAttribute("style").startsWith("background:#"), "cells are colored");
    assertTrue(html.contains(">Ankle boot</th>"));

    // profile: one bar segment per phase, a table row per phase
    List<Element> rects = elements(doc, "rect").stream().filter(r -> r.hasAttribute("data-phase")).toList();
    assertEquals(List.of("data", "forward", "loss", "backward", "optimizer", "callbacks"),
        rects.stream().map(r -> r.getAttribute("data-phase")).toList());
    assertTrue(html.contains("<td>backward</td><td>0.068</td><td>1.700</td><td>53.1</td>"), "40 steps of 1.7 ms backward");

    // histograms of the 4 parameters: weights and gradients
    List<Element> hist = elements(doc, "svg").stream().filter(s -> "histogram".equals(s.getAttribute("class"))).toList();
    assertEquals(4, hist.stream().filter(s -> "weights".equals(s.getAttribute("data-kind"))).count());
    assertEquals(4, hist.stream().filter(s -> "gradients".equals(s.getAttribute("data-kind"))).count());
    assertTrue(html.contains("step 0 \u2192 30 (4 snapshots)"), "snapshots at steps 0, 10, 20, 30");

    try (Stream<Path> s = Files.list(dir)) {
      assertTrue(s.noneMatch(p -> p.getFileName().toString().endsWith(".tmp")), "no temporary file left");
    }
  }

  @Test
  void onlyMetricsCsvIsNeeded() throws Exception {
    Files.writeString(dir.resolve("metrics.csv"), "epoch,step,time_s,loss\n1,10,1.5,0.9\n2,20,3.0,0.7\n3,30,4.5,0.6\n");
    HtmlReport.write(dir);
    Document doc = parse(dir.resolve("report.html"));
    assertEquals(3, points(series(doc, "loss")).length);
    assertEquals(1, elements(doc, "polyline").size());
    assertTrue(elements(doc, "table").stream().noneMatch(t -> "cm".equals(t.getAttribute("class"))));
  }

  @Test
  void oneEpochAndConstantValuesStillDraw() throws Exception {
    Files.writeString(dir.resolve("metrics.csv"), "epoch,step,time_s,loss,accuracy\n1,10,1.5,0.5,0.5\n");
    HtmlReport.write(dir);
    Document doc = parse(dir.resolve("report.html"));
    assertEquals(1, points(series(doc, "loss")).length);
    for (Element p : elements(doc, "polyline")) {
      for (double[] xy : points(p)) assertTrue(Double.isFinite(xy[0]) && Double.isFinite(xy[1]), p.getAttribute("points"));
    }
  }

  @Test
  void badRunFilesAreNamedWithWhereTheyAreWrong() throws IOException {
    NoSuchFileException none = assertThrows(NoSuchFileException.class, () -> HtmlReport.write(dir));
    assertTrue(none.getMessage().contains("metrics.csv"), none.getMessage());

    Path csv = dir.resolve("metrics.csv");
    Files.writeString(csv, "epoch,step,time_s,loss\n1,10,1.5,0.9\n2,20,3.0,abc\n");
    RunFileException e = assertThrows(RunFileException.class, () -> HtmlReport.write(dir));
    assertEquals(csv, e.file());
    assertTrue(e.getMessage().contains("line 3, column 'loss': 'abc' is not a number"), e.getMessage());

    Files.writeString(csv, "epoch,step,time_s,loss\n1,10,1.5,\"0.9\n");
    e = assertThrows(RunFileException.class, () -> HtmlReport.write(dir));
    assertEquals(32, e.offset(), e.getMessage());
    assertTrue(e.getMessage().contains("unterminated quoted cell"), e.getMessage());

    Files.writeString(csv, "epoch,step,time_s,loss\n1,10,1.5,0.9\n");
    Path cm = dir.resolve("confusion_matrix.json");
    Files.writeString(cm, "{\"labels\":[\"a\",\"b\"],\"matrix\":[[1,2],[3]]}");
    e = assertThrows(RunFileException.class, () -> HtmlReport.write(dir));
    assertTrue(e.getMessage().startsWith(cm + ": matrix row 1 must be a list of 2 counts"), e.getMessage());
    Files.writeString(cm, "{\"labels\":[\"a\",\"b\"],\"matrix\":[[1,2],[3,4]]");
    e = assertThrows(RunFileException.class, () -> HtmlReport.write(dir));
    assertEquals(42, e.offset(), e.getMessage());
    assertTrue(e.getMessage().endsWith("expected ',' or '}' after a member, found the end of the text"), e.getMessage());
    Files.delete(cm);

    // a huge file is refused from its size, before anything is read
    Path hist = dir.resolve("profile.json");
    try (RandomAccessFile raf = new RandomAccessFile(hist.toFile(), "rw")) {
      raf.setLength(1L << 30);
    }
    e = assertThrows(RunFileException.class, () -> HtmlReport.write(dir));
    assertTrue(e.getMessage().contains("larger than the"), e.getMessage());
    assertFalse(Files.exists(dir.resolve("report.html")), "nothing written when an input is bad");
  }
}
