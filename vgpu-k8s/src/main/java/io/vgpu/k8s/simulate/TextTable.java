package io.vgpu.k8s.simulate;

import java.util.ArrayList;
import java.util.List;

/**
 * A plain-text table: a header and rows, columns padded to their widest cell, two spaces apart. Used by
 * the readable outputs of the command line.
 */
public final class TextTable {
  private final List<String[]> rows = new ArrayList<>();
  private final int columns;

  /** A table with this header row. */
  public TextTable(String... header) {
    this.columns = header.length;
    rows.add(header);
  }

  /** Adds a row of exactly as many cells as the header has. */
  public void row(String... cells) {
    if (cells.length != columns) {
      throw new IllegalArgumentException("expected " + columns + " cells, got " + cells.length);
    }
    rows.add(cells);
  }

  /** The table with each line prefixed by {@code indent}; trailing spaces are trimmed. */
  public String render(String indent) {
    int[] widths = new int[columns];
    for (String[] row : rows) {
      for (int c = 0; c < columns; c++) {
        widths[c] = Math.max(widths[c], row[c].length());
      }
    }
    StringBuilder out = new StringBuilder();
    for (String[] row : rows) {
      StringBuilder line = new StringBuilder(indent);
      for (int c = 0; c < columns; c++) {
        line.append(row[c]);
        if (c < columns - 1) {
          line.append(" ".repeat(widths[c] - row[c].length() + 2));
        }
      }
      out.append(line.toString().stripTrailing()).append('\n');
    }
    return out.toString();
  }
}
