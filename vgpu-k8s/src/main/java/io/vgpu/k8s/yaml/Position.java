package io.vgpu.k8s.yaml;

import java.util.Objects;

/**
 * Where a value was written: file, line and column, both counted from 1.
 *
 * @param file the file's name as the user gave it
 * @param line the line, from 1
 * @param column the column, from 1
 */
public record Position(String file, int line, int column) {

  /** Validates the fields. */
  public Position {
    Objects.requireNonNull(file, "file");
  }

  /** Returns {@code file:line:column}. */
  @Override
  public String toString() {
    return file + ":" + line + ":" + column;
  }
}
