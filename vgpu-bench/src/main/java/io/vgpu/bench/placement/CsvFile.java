package io.vgpu.bench.placement;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * A comma-separated file with a header row, read row by row; every error names {@code file:line}, the
 * column and the value. Fields are plain (the trace's files quote nothing); blank lines are skipped.
 */
final class CsvFile {
  /** More GPUs than any node has: a typo or a wrong column. */
  static final int MAX_GPUS = 1024;

  private final Path path;
  private final String what;

  private CsvFile(Path path, String what) {
    this.path = path;
    this.what = what;
  }

  /** One data row, with typed accessors that report bad values against the row's line. */
  final class Row {
    private final String[] fields;
    private final Map<String, Integer> columns;
    private final int line;

    private Row(String[] fields, Map<String, Integer> columns, int line) {
      this.fields = fields;
      this.columns = columns;
      this.line = line;
    }

    /** The field of a required column. */
    String text(String column) {
      return fields[columns.get(column)].trim();
    }

    /** The field of an optional column, empty when the file has no such column. */
    String optionalText(String column) {
      Integer i = columns.get(column);
      return i == null ? "" : fields[i].trim();
    }

    /** The field as a non-negative whole number. */
    long count(String column) {
      String value = text(column);
      try {
        long parsed = Long.parseLong(value);
        if (parsed >= 0) {
          return parsed;
        }
      } catch (NumberFormatException e) {
        // reported below
      }
      throw error("column '" + column + "' value '" + value + "' is not a non-negative whole number");
    }

    /** The field as a number of GPUs, at most {@link #MAX_GPUS}. */
    int gpuCount(String column) {
      long gpus = count(column);
      if (gpus > MAX_GPUS) {
        throw error("column '" + column + "' value '" + gpus + "' is more GPUs than a node can have");
      }
      return (int) gpus;
    }

    /** A one-line error about this row. */
    BenchInputException error(String message) {
      return new BenchInputException(path + ":" + line + ": " + message);
    }
  }

  /** Opens a file for {@link #rows}; {@code what} names it in errors, e.g. "nodes file". */
  static CsvFile of(Path path, String what) {
    return new CsvFile(path, what);
  }

  /**
   * Reads every data row, checking the header has the required columns and each row has as many fields.
   *
   * @throws BenchInputException when the file is missing or unreadable, or a row is malformed
   */
  void rows(List<String> requiredColumns, Consumer<Row> consumer) {
    try (BufferedReader reader = Files.newBufferedReader(path, StandardCharsets.UTF_8)) {
      String header = reader.readLine();
      if (header == null) {
        throw new BenchInputException(path + ":1: " + what + " is empty (expected a header row)");
      }
      String[] names = split(header);
      Map<String, Integer> columns = new HashMap<>();
      for (int i = 0; i < names.length; i++) {
        columns.putIfAbsent(names[i].trim(), i);
      }
      List<String> missing = new ArrayList<>();
      for (String column : requiredColumns) {
        if (!columns.containsKey(column)) {
          missing.add(column);
        }
      }
      if (!missing.isEmpty()) {
        throw new BenchInputException(
            path + ":1: " + what + " lacks column" + (missing.size() > 1 ? "s " : " ") + String.join(", ", missing)
                + " (header is '" + header.trim() + "')");
      }
      int line = 1;
      String text;
      while ((text = reader.readLine()) != null) {
        line++;
        if (text.isBlank()) {
          continue;
        }
        String[] fields = split(text);
        if (fields.length != names.length) {
          throw new BenchInputException(
              path + ":" + line + ": " + fields.length + " fields, but the header has " + names.length);
        }
        consumer.accept(new Row(fields, columns, line));
      }
    } catch (NoSuchFileException e) {
      throw new BenchInputException(what + " '" + path + "' does not exist");
    } catch (IOException e) {
      throw new BenchInputException(what + " '" + path + "' cannot be read: " + message(e));
    }
  }

  private static String message(IOException e) {
    @Nullable String m = e.getMessage();
    return m == null ? e.getClass().getSimpleName() : m;
  }

  private static String[] split(String line) {
    String trimmed = line.endsWith("\r") ? line.substring(0, line.length() - 1) : line;
    return trimmed.split(",", -1);
  }
}
