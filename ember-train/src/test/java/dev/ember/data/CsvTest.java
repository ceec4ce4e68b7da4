package dev.ember.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.DType;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CsvTest {
  @TempDir Path dir;

  Path write(String name, String text) throws Exception {
    return Files.writeString(dir.resolve(name), text);
  }

  @Test
  void headerAndNamedLabelColumn() throws Exception {
    Path f = write("iris.csv", "a,species,b\n1.5,2,-3\n 4 ,0, 5e-1\n\n7,1,.25\n");
    TensorDataset ds = Csv.read(f, Csv.Options.defaults().withLabel("species"));
    assertEquals(3, ds.size());
    assertArrayEquals(new int[] {3, 2}, ds.inputs().shape());
    assertEquals(DType.F32, ds.inputs().dtype());
    assertArrayEquals(new float[] {1.5f, -3f, 4f, 0.5f, 7f, 0.25f}, ds.inputs().toFloatArray());
    assertEquals(DType.I64, ds.targets().dtype());
    assertArrayEquals(new long[] {2, 0, 1}, ds.targets().toLongArray());
  }

  @Test
  void noHeaderDelimiterQuotesCrlfAndRegressionTargets() throws Exception {
    Path f = write("r.csv", "\"0.5\";1;2\r\n-1.25;\"3\";nan\r\n2;-inf;1e3\rINF;1;1");
    TensorDataset ds = Csv.read(f, Csv.Options.defaults().withHeader(false).withDelimiter(';').withLabel(0)
        .withLabelType(DType.F64));
    assertArrayEquals(new double[] {0.5, -1.25, 2, Double.POSITIVE_INFINITY}, ds.targets().toDoubleArray());
    float[] x = ds.inputs().toFloatArray();
    assertEquals(8, x.length);
    assertEquals(1f, x[0]);
    assertTrue(Float.isNaN(x[3]));
    assertEquals(Float.NEGATIVE_INFINITY, x[4]);
    assertEquals(1000f, x[5]);
    assertArrayEquals(new long[] {3}, Csv.read(write("l.csv", "\uFEFFy,x\n3.0,1\n"), Csv.Options.defaults().withLabel("y"))
        .targets().toLongArray(), "a byte order mark is skipped; an integral float is a valid class index");
  }

  @Test
  void streamYieldsTheSameRows() throws Exception {
    Path f = write("s.csv", "x1,x2,y\n1,2,0\n3,4,1\n5,6,2\n");
    TensorDataset all = Csv.read(f, Csv.Options.defaults());
    List<Sample> rows = new ArrayList<>();
    for (Sample s : Csv.stream(f, Csv.Options.defaults())) rows.add(s);
    assertEquals(3, rows.size());
    for (int i = 0; i < 3; i++) {
      assertArrayEquals(all.get(i).input().toFloatArray(), rows.get(i).input().toFloatArray());
      assertEquals(all.get(i).target().getLong(), rows.get(i).target().getLong());
      assertEquals(0, rows.get(i).target().dim());
    }
    Path bad = write("sbad.csv", "x,y\n1,0\nz,1\n");
    var e = assertThrows(UncheckedIOException.class, () -> {
      for (Sample s : Csv.stream(bad, Csv.Options.defaults())) assertEquals(1, s.input().numel());
    });
    assertEquals("csv: " + bad + ": line 3, column 1 ('x'): 'z' is not a number", e.getCause().getMessage());
  }

  @Test
  void badRowsNameLineColumnAndOffset() throws Exception {
    Path ragged = write("ragged.csv", "a,b,y\n1,2,0\n3,4\n");
    var e = assertThrows(DataFormatException.class, () -> Csv.read(ragged, Csv.Options.defaults()));
    assertEquals("csv: " + ragged + ": line 3: ragged row: 2 fields, expected 3 (as in the header)", e.getMessage());
    assertEquals(3, e.line());
    assertEquals(12, e.offset());

    Path missing = write("missing.csv", "a,b,y\n1,,0\n");
    e = assertThrows(DataFormatException.class, () -> Csv.read(missing, Csv.Options.defaults()));
    assertEquals("csv: " + missing + ": line 2, column 2 ('b'): missing value (empty field)", e.getMessage());
    assertEquals(8, e.offset());
    assertEquals(2, e.column());

    for (String bad : new String[] {"abc", "1.5f", "0x10", "1e", "--1", "1,5"}) {
      Path f = write("bad.csv", "a;y\n0;1\n" + bad + ";0\n");
      e = assertThrows(DataFormatException.class, () -> Csv.read(f, Csv.Options.defaults().withDelimiter(';')));
      assertEquals("csv: " + f + ": line 3, column 1 ('a'): '" + bad + "' is not a number", e.getMessage());
    }

    Path frac = write("frac.csv", "1,2.5\n");
    e = assertThrows(DataFormatException.class, () -> Csv.read(frac, Csv.Options.defaults().withHeader(false)));
    assertEquals("csv: " + frac + ": line 1, column 2: label '2.5' is not an integer class index; hint: "
        + "withLabelType(DType.F32) for regression", e.getMessage());

    Path noLabel = write("nolabel.csv", "a,b\n1,2\n");
    e = assertThrows(DataFormatException.class, () -> Csv.read(noLabel, Csv.Options.defaults().withLabel("y")));
    assertEquals("csv: " + noLabel + ": line 1: no column named 'y'; the header has [a, b]", e.getMessage());

    Path empty = write("empty.csv", "");
    e = assertThrows(DataFormatException.class, () -> Csv.read(empty, Csv.Options.defaults()));
    assertEquals("csv: " + empty + ": line 1: empty file: no header line", e.getMessage());

    Path headerOnly = write("header.csv", "a,y\n\n");
    e = assertThrows(DataFormatException.class, () -> Csv.read(headerOnly, Csv.Options.defaults()));
    assertEquals("csv: " + headerOnly + ": no data rows after the header", e.getMessage());

    Path quote = write("quote.csv", "a,y\n\"1,0\n");
    e = assertThrows(DataFormatException.class, () -> Csv.read(quote, Csv.Options.defaults()));
    assertTrue(e.getMessage().startsWith("csv: " + quote + ": line 2, column 1: a quoted field runs past the end of the line"),
        e.getMessage());

    assertThrows(IllegalArgumentException.class, () -> Csv.Options.defaults().withHeader(false).withLabel("y"));
  }
}
