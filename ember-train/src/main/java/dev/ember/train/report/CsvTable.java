package dev.ember.train.report;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * RFC 4180 CSV as the run files use it: comma-separated cells, a cell quoted with {@code "} when
 * it holds a comma, quote or line break (a quote inside doubled), rows ended by {@code \n} or
 * {@code \r\n}. (Data sets in CSV are read by {@link dev.ember.data.Csv}.)
 */
public final class CsvTable {
  private CsvTable() {}

  /** Appends {@code cell}, quoted if it must be. */
  public static void cell(StringBuilder sb, String cell) {
    boolean quote = false;
    for (int k = 0; k < cell.length() && !quote; k++) {
      char c = cell.charAt(k);
      quote = c == ',' || c == '"' || c == '\n' || c == '\r';
    }
    if (!quote) {
      sb.append(cell);
      return;
    }
    sb.append('"');
    for (int k = 0; k < cell.length(); k++) {
      char c = cell.charAt(k);
      if (c == '"') sb.append('"');
      sb.append(c);
    }
    sb.append('"');
  }

  /** Appends one row of cells and a {@code \n}. */
  public static void row(StringBuilder sb, List<String> cells) {
    for (int k = 0; k < cells.size(); k++) {
      if (k > 0) sb.append(',');
      cell(sb, cells.get(k));
    }
    sb.append('\n');
  }

  /**
   * Splits {@code text} into rows of cells. A trailing line break does not make an empty row.
   *
   * @throws RunFileException for an unterminated quoted cell or a quote in the middle of an unquoted cell
   */
  public static List<List<String>> parse(String text, Path file) throws RunFileException {
    List<List<String>> rows = new ArrayList<>();
    List<String> row = new ArrayList<>();
    StringBuilder cell = new StringBuilder();
    int i = 0;
    int n = text.length();
    boolean rowHasContent = false;
    while (i < n) {
      char c = text.charAt(i);
      if (c == '"' && cell.isEmpty()) {
        int start = i;
        i++;
        while (true) {
          if (i >= n) throw new RunFileException(file, byteOffset(text, start), "unterminated quoted cell");
          char q = text.charAt(i);
          if (q == '"') {
            if (i + 1 < n && text.charAt(i + 1) == '"') {
              cell.append('"');
              i += 2;
              continue;
            }
            i++;
            break;
          }
          cell.append(q);
          i++;
        }
        if (i < n && text.charAt(i) != ',' && text.charAt(i) != '\n' && text.charAt(i) != '\r') {
          throw new RunFileException(file, byteOffset(text, i), "expected ',' or a line break after a quoted cell");
        }
        rowHasContent = true;
        continue;
      }
      if (c == '"') throw new RunFileException(file, byteOffset(text, i), "a quote inside an unquoted cell");
      if (c == ',') {
        row.add(cell.toString());
        cell.setLength(0);
        rowHasContent = true;
        i++;
      } else if (c == '\n' || c == '\r') {
        if (c == '\r' && i + 1 < n && text.charAt(i + 1) == '\n') i++;
        i++;
        row.add(cell.toString());
        cell.setLength(0);
        rows.add(row);
        row = new ArrayList<>();
        rowHasContent = false;
      } else {
        cell.append(c);
        rowHasContent = true;
        i++;
      }
    }
    if (rowHasContent || !cell.isEmpty()) {
      row.add(cell.toString());
      rows.add(row);
    }
    return rows;
  }

  private static long byteOffset(String text, int charIndex) {
    return text.substring(0, charIndex).getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
  }
}
