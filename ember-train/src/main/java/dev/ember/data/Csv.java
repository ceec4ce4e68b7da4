package dev.ember.data;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Objects;

/**
 * Reads numeric CSV files into samples: every column but the label column becomes an F32 feature,
 * the label column becomes the target (I64 class indices by default, or a floating-point value).
 * An optional header names the columns; fields may be quoted ({@code "1.5"}, {@code ""} for a
 * quote) and surrounded by spaces; blank lines are skipped. Values are decimal numbers with an
 * optional exponent, or {@code nan}/{@code inf} in any case.
 *
 * <p>Problems throw {@link DataFormatException} with the line, column and byte offset: a row with
 * more or fewer fields than the first, an empty field (a missing value), text that is not a
 * number, a non-integral class label, a label column that is not there.
 */
public final class Csv {
  private Csv() {}

  private static final String FORMAT = "csv";

  /**
   * How to read a CSV file.
   *
   * @param header     whether the first non-blank line names the columns
   * @param delimiter  the field separator
   * @param labelName  the label column's name (needs a header), or null to use {@code labelIndex}
   * @param labelIndex the label column's index from 0 (negative counts from the end: -1 is the last)
   * @param labelType  I64 or I32 for class indices, F32 or F64 for regression targets
   */
  public record Options(boolean header, char delimiter, String labelName, int labelIndex, DType labelType) {
    public Options {
      Objects.requireNonNull(labelType, "Csv.Options: labelType is null");
      if (labelType == DType.BOOL) throw new IllegalArgumentException("Csv.Options: labelType must be I64, I32, F32 or F64, got bool");
      if (delimiter == '"' || delimiter == '\n' || delimiter == '\r') {
        throw new IllegalArgumentException("Csv.Options: delimiter cannot be a quote or a line break, got '" + delimiter + "'");
      }
      if (labelName != null && !header) {
        throw new IllegalArgumentException("Csv.Options: a label column by name ('" + labelName + "') needs a header line");
      }
    }

    /** A header line, comma-separated, the last column as an I64 class label. */
    public static Options defaults() {
      return new Options(true, ',', null, -1, DType.I64);
    }

    /** With or without a header line (without one, a label chosen by name is dropped). */
    public Options withHeader(boolean header) {
      return new Options(header, delimiter, header ? labelName : null, labelIndex, labelType);
    }

    /** With another field separator (e.g. ';' or '\t'). */
    public Options withDelimiter(char delimiter) {
      return new Options(header, delimiter, labelName, labelIndex, labelType);
    }

    /** The label column by name (the header must have it). */
    public Options withLabel(String name) {
      return new Options(header, delimiter, Objects.requireNonNull(name, "Csv.Options: label name is null"), labelIndex, labelType);
    }

    /** The label column by index (negative counts from the end). */
    public Options withLabel(int index) {
      return new Options(header, delimiter, null, index, labelType);
    }

    /** With labels read as {@code type}: I64 or I32 for classes, F32 or F64 for regression. */
    public Options withLabelType(DType type) {
      return new Options(header, delimiter, labelName, labelIndex, type);
    }
  }

  /** The whole file as a {@link TensorDataset}: inputs F32 {@code [rows, columns - 1]}, targets {@code [rows]}. */
  public static TensorDataset read(Path file, Options options) throws IOException {
    try (Parser p = new Parser(file, options)) {
      int f = p.features();
      float[] x = new float[Math.max(16, f) * 64];
      double[] yd = new double[64];
      long[] yl = new long[64];
      boolean integral = !options.labelType().isFloatingPoint();
      float[] row = new float[f];
      int rows = 0;
      while (p.next(row)) {
        if ((long) (rows + 1) * f > Idx.MAX_ELEMENTS) {
          throw DataFormatException.atLine(FORMAT, file, p.lineOffset, p.line, 0, null, "more than " + Idx.MAX_ELEMENTS
              + " feature values, more than one tensor holds");
        }
        if ((rows + 1) * f > x.length) x = Arrays.copyOf(x, (int) Math.min(Idx.MAX_ELEMENTS, Math.max(2L * x.length, (long) (rows + 1) * f)));
        if (rows == yl.length) {
          yl = integral ? Arrays.copyOf(yl, 2 * rows) : yl;
          yd = integral ? yd : Arrays.copyOf(yd, 2 * rows);
        }
        System.arraycopy(row, 0, x, rows * f, f);
        if (integral) {
          yl[rows] = p.labelLong;
        } else {
          yd[rows] = p.labelDouble;
        }
        rows++;
      }
      if (rows == 0) {
        throw DataFormatException.at(FORMAT, file, -1, "no data rows after the header");
      }
      Tensor inputs = Tensor.of(Arrays.copyOf(x, rows * f), rows, f);
      Tensor targets = integral ? Tensor.of(Arrays.copyOf(yl, rows), rows) : Tensor.of(Arrays.copyOf(yd, rows), rows);
      return new TensorDataset(inputs, targets.to(options.labelType()));
    }
  }

  /**
   * The rows streamed one at a time (input F32 {@code [columns - 1]}, target 0-d), for files too
   * large to hold. Each iteration re-reads the file; a problem surfaces as an
   * {@link UncheckedIOException} wrapping the {@link DataFormatException}.
   */
  public static IterableDataset<Sample> stream(Path file, Options options) {
    Objects.requireNonNull(file, "Csv.stream: file is null");
    Objects.requireNonNull(options, "Csv.stream: options are null");
    return () -> {
      Parser p;
      try {
        p = new Parser(file, options);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      return new Iterator<>() {
        private Sample next;
        private boolean done;
        private long rows;

        @Override
        public boolean hasNext() {
          if (next != null) return true;
          if (done) return false;
          float[] row = new float[p.features()];
          try {
            if (!p.next(row)) {
              done = true;
              p.close();
              if (rows == 0) throw DataFormatException.at(FORMAT, file, -1, "no data rows after the header");
              return false;
            }
            rows++;
          } catch (IOException e) {
            done = true;
            try {
              p.close();
            } catch (IOException ce) {
              e.addSuppressed(ce);
            }
            throw new UncheckedIOException(e);
          }
          Tensor target = options.labelType().isFloatingPoint() ? Tensor.scalar(p.labelDouble, options.labelType())
              : Tensor.of(new long[] {p.labelLong}, 1).reshape().to(options.labelType());
          next = new Sample(Tensor.of(row), target);
          return true;
        }

        @Override
        public Sample next() {
          if (!hasNext()) throw new NoSuchElementException("Csv.stream: no row after the last");
          Sample s = next;
          next = null;
          return s;
        }
      };
    };
  }

  /** Reads rows of bytes; keeps the line number and byte offset of the current line for messages. */
  private static final class Parser implements AutoCloseable {
    private final Path file;
    private final Options opt;
    private final InputStream in;
    private final List<String> names = new ArrayList<>();
    private int columns = -1;
    private int label = -1;
    private boolean rowReady; // the first row, read by init() to count columns, is still to be returned
    private final byte[] field0 = new byte[0];
    private byte[] field = new byte[64];
    private int flen;
    private long offset; // bytes consumed
    long line; // current line number, from 1
    long lineOffset;
    private int pending = -2; // one byte of look-ahead (-2: none)
    long labelLong;
    double labelDouble;
    private final List<byte[]> rowFields = new ArrayList<>();
    private final List<Integer> rowStarts = new ArrayList<>();

    Parser(Path file, Options opt) throws IOException {
      this.file = file;
      this.opt = opt;
      this.in = new BufferedInputStream(Files.newInputStream(file), 1 << 16);
      try {
        init();
      } catch (IOException | RuntimeException e) {
        in.close();
        throw e;
      }
    }

    private void init() throws IOException {
      in.mark(3);
      byte[] bom = in.readNBytes(3);
      if (bom.length == 3 && (bom[0] & 0xff) == 0xEF && (bom[1] & 0xff) == 0xBB && (bom[2] & 0xff) == 0xBF) {
        offset = 3; // a UTF-8 byte order mark (as Excel writes): not part of the first name
      } else {
        in.reset();
      }
      if (opt.header()) {
        if (!readRow()) throw DataFormatException.atLine(FORMAT, file, 0, Math.max(line, 1), 0, null, "empty file: no header line");
        for (byte[] f : rowFields) names.add(new String(f, StandardCharsets.UTF_8));
        columns = names.size();
        resolveLabel();
      } else {
        if (!readRow()) throw DataFormatException.atLine(FORMAT, file, 0, Math.max(line, 1), 0, null, "empty file: no rows");
        columns = rowFields.size(); // the first row fixes the column count
        resolveLabel();
        rowReady = true;
      }
    }

    private void resolveLabel() throws DataFormatException {
      if (columns < 2) {
        throw DataFormatException.atLine(FORMAT, file, lineOffset, line, 0, null, "found " + columns
            + " column, need at least 2 (features and a label)");
      }
      if (opt.labelName() != null) {
        int at = -1;
        for (int i = 0; i < names.size(); i++) {
          if (names.get(i).equals(opt.labelName())) {
            if (at >= 0) {
              throw DataFormatException.atLine(FORMAT, file, lineOffset, line, i + 1, null, "label column '" + opt.labelName()
                  + "' appears twice (columns " + (at + 1) + " and " + (i + 1) + ")");
            }
            at = i;
          }
        }
        if (at < 0) {
          throw DataFormatException.atLine(FORMAT, file, lineOffset, line, 0, null, "no column named '" + opt.labelName()
              + "'; the header has " + names);
        }
        label = at;
      } else {
        int i = opt.labelIndex() < 0 ? columns + opt.labelIndex() : opt.labelIndex();
        if (i < 0 || i >= columns) {
          throw DataFormatException.atLine(FORMAT, file, lineOffset, line, 0, null, "label column index " + opt.labelIndex()
              + " is out of range for " + columns + " columns");
        }
        label = i;
      }
    }

    int features() {
      return columns - 1;
    }

    /** Reads the next data row into {@code row} and the label fields; false at the end of the file. */
    boolean next(float[] row) throws IOException {
      if (rowReady) {
        rowReady = false;
      } else if (!readRow()) {
        return false;
      }
      if (rowFields.size() != columns) {
        throw DataFormatException.atLine(FORMAT, file, lineOffset, line, 0, null, "ragged row: " + rowFields.size()
            + " fields, expected " + columns + (opt.header() ? " (as in the header)" : " (as in the first row)"));
      }
      int k = 0;
      for (int c = 0; c < columns; c++) {
        byte[] f = rowFields.get(c);
        if (c == label) {
          parseLabel(f, c);
        } else {
          row[k++] = (float) number(f, c, true);
        }
      }
      return true;
    }

    private void parseLabel(byte[] f, int c) throws DataFormatException {
      if (opt.labelType().isFloatingPoint()) {
        labelDouble = number(f, c, false);
        return;
      }
      double v = number(f, c, false);
      String s = new String(f, StandardCharsets.ISO_8859_1).trim();
      try {
        labelLong = Long.parseLong(s.startsWith("+") ? s.substring(1) : s);
        return;
      } catch (NumberFormatException notPlain) {
        // "3.0" or "3e0": integral, but written as a float
      }
      if (v != Math.rint(v) || Math.abs(v) > 0x1p53) {
        throw error(c, "label '" + s + "' is not an integer class index; hint: withLabelType(DType.F32) for regression");
      }
      labelLong = (long) v;
    }

    /** The numeric value of a field, or a DataFormatException naming line and column. */
    private double number(byte[] f, int c, boolean asFloat) throws DataFormatException {
      int a = 0, b = f.length;
      while (a < b && f[a] == ' ') a++;
      while (b > a && f[b - 1] == ' ') b--;
      if (a == b) throw error(c, "missing value (empty field)");
      // fast path: a plain integer of up to 7 digits is exact in float and double
      int i = a;
      boolean neg = f[i] == '-';
      if (neg || f[i] == '+') i++;
      if (i < b && b - i <= 7) {
        int v = 0;
        int j = i;
        for (; j < b && f[j] >= '0' && f[j] <= '9'; j++) v = v * 10 + (f[j] - '0');
        if (j == b) return neg ? -v : v;
      }
      String s = new String(f, a, b - a, StandardCharsets.ISO_8859_1);
      String lower = s.toLowerCase(java.util.Locale.ROOT);
      String unsigned = lower.startsWith("-") || lower.startsWith("+") ? lower.substring(1) : lower;
      if (unsigned.equals("nan")) return Double.NaN;
      if (unsigned.equals("inf") || unsigned.equals("infinity")) return lower.startsWith("-") ? Double.NEGATIVE_INFINITY : Double.POSITIVE_INFINITY;
      if (!isDecimal(s)) throw error(c, "'" + printable(s) + "' is not a number");
      return asFloat ? Float.parseFloat(s) : Double.parseDouble(s);
    }

    /** {@code [+-]? (d+ (. d*)? | . d+) ([eE] [+-]? d+)?}: what Java would parse, minus hex and type suffixes. */
    private static boolean isDecimal(String s) {
      int i = 0, n = s.length();
      if (i < n && (s.charAt(i) == '+' || s.charAt(i) == '-')) i++;
      int digits = 0;
      while (i < n && Character.isDigit(s.charAt(i)) && s.charAt(i) < 128) {
        i++;
        digits++;
      }
      if (i < n && s.charAt(i) == '.') {
        i++;
        while (i < n && s.charAt(i) >= '0' && s.charAt(i) <= '9') {
          i++;
          digits++;
        }
      }
      if (digits == 0) return false;
      if (i < n && (s.charAt(i) == 'e' || s.charAt(i) == 'E')) {
        i++;
        if (i < n && (s.charAt(i) == '+' || s.charAt(i) == '-')) i++;
        int exp = 0;
        while (i < n && s.charAt(i) >= '0' && s.charAt(i) <= '9') {
          i++;
          exp++;
        }
        if (exp == 0) return false;
      }
      return i == n;
    }

    private static String printable(String s) {
      String t = s.length() > 40 ? s.substring(0, 40) + "..." : s;
      StringBuilder sb = new StringBuilder();
      for (char ch : t.toCharArray()) sb.append(ch < 32 || ch == 127 ? String.format("\\x%02x", (int) ch) : String.valueOf(ch));
      return sb.toString();
    }

    private DataFormatException error(int c, String problem) {
      return DataFormatException.atLine(FORMAT, file, lineOffset + rowStarts.get(c), line, c + 1,
          c < names.size() ? names.get(c) : null, problem);
    }

    /** Splits the next non-blank line into {@link #rowFields}; false at the end of the file. */
    private boolean readRow() throws IOException {
      while (true) {
        rowFields.clear();
        rowStarts.clear();
        int b = read();
        if (b < 0) return false;
        line++;
        lineOffset = offset - 1;
        boolean blank = true;
        flen = 0;
        int fieldStart = 0;
        boolean quoted = false, wasQuoted = false;
        while (true) {
          if (b < 0 || (!quoted && (b == '\n' || b == '\r'))) {
            if (b == '\r') {
              int nx = read();
              if (nx != '\n' && nx >= 0) unread(nx); // a lone CR ends the line too
            }
            break;
          }
          if (quoted) {
            if (b == '"') {
              int nx = read();
              if (nx == '"') {
                append(b);
              } else {
                quoted = false;
                b = nx;
                continue;
              }
            } else if (b == '\n' || b == '\r') {
              throw DataFormatException.atLine(FORMAT, file, lineOffset, line, rowFields.size() + 1, null,
                  "a quoted field runs past the end of the line (multi-line fields are not supported)");
            } else {
              append(b);
            }
          } else if (b == opt.delimiter()) {
            endField(fieldStart);
            fieldStart = (int) (offset - lineOffset);
            wasQuoted = false;
            blank = false;
          } else if (b == '"' && !wasQuoted && isBlankSoFar()) {
            quoted = true;
            wasQuoted = true;
            flen = 0;
            blank = false;
          } else {
            if (b != ' ' && b != '\t') blank = false;
            append(b);
          }
          b = read();
        }
        if (quoted) {
          throw DataFormatException.atLine(FORMAT, file, lineOffset, line, rowFields.size() + 1, null, "unterminated quoted field");
        }
        if (blank && rowFields.isEmpty()) continue;
        endField(fieldStart);
        return true;
      }
    }

    private boolean isBlankSoFar() {
      for (int i = 0; i < flen; i++) if (field[i] != ' ' && field[i] != '\t') return false;
      return true;
    }

    private void append(int b) {
      if (flen == field.length) field = Arrays.copyOf(field, 2 * flen);
      field[flen++] = (byte) b;
    }

    private void endField(int start) {
      rowFields.add(flen == 0 ? field0 : Arrays.copyOf(field, flen));
      rowStarts.add(start);
      flen = 0;
    }

    private void unread(int b) {
      pending = b;
      offset--;
    }

    private int read() throws IOException {
      int b;
      if (pending != -2) {
        b = pending;
        pending = -2;
      } else {
        b = in.read();
      }
      if (b >= 0) offset++;
      return b;
    }

    @Override
    public void close() throws IOException {
      in.close();
    }
  }
}
