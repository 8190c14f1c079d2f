package io.vgpu.k8s.yaml;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.snakeyaml.engine.v2.exceptions.Mark;
import tools.jackson.core.JacksonException;
import tools.jackson.core.JsonParser;
import tools.jackson.core.JsonToken;
import tools.jackson.core.ObjectReadContext;
import tools.jackson.core.TokenStreamFactory;
import tools.jackson.core.TokenStreamLocation;
import tools.jackson.core.json.JsonFactory;

/**
 * Reads one YAML or JSON document into a {@link YamlNode} tree that keeps every value's position.
 * JSON is chosen for files ending in {@code .json} or text starting with <code>{</code> or {@code [};
 * everything else is read as YAML ({@link YamlEvents}: anchors, aliases and merge keys are resolved).
 * Duplicate keys and extra documents are errors.
 */
public final class YamlReader {
  private static final TokenStreamFactory JSON = JsonFactory.builder().build();

  private YamlReader() {}

  /**
   * Reads a file.
   *
   * @throws InputException when the file cannot be read or is not well-formed
   */
  public static YamlNode read(Path file) {
    String text;
    try {
      text = Files.readString(file, StandardCharsets.UTF_8);
    } catch (NoSuchFileException e) {
      throw new InputException(file + ": no such file");
    } catch (IOException e) {
      throw new InputException(file + ": cannot read: " + e.getMessage());
    }
    return read(text, file.toString());
  }

  /**
   * Reads a document from text.
   *
   * @param text the document
   * @param fileName the name used in positions
   * @throws InputException when the text is empty or not well-formed
   */
  public static YamlNode read(String text, String fileName) {
    String trimmed = text.stripLeading();
    boolean json = fileName.endsWith(".json") || trimmed.startsWith("{") || trimmed.startsWith("[");
    return json ? readJson(text, fileName) : YamlEvents.read(text, fileName);
  }

  private static YamlNode readJson(String text, String fileName) {
    try (JsonParser parser = JSON.createParser(ObjectReadContext.empty(), text)) {
      JsonToken first = parser.nextToken();
      if (first == null) {
        throw new InputException(new Position(fileName, 1, 1), "the document is empty");
      }
      YamlNode root = readValue(parser, fileName);
      JsonToken extra = parser.nextToken();
      if (extra != null) {
        throw new InputException(position(parser.currentTokenLocation(), fileName), "expected one document, found more content");
      }
      return root;
    } catch (JacksonException e) {
      TokenStreamLocation at = e.getLocation();
      Position position = at == null ? new Position(fileName, 1, 1) : position(at, fileName);
      throw new InputException(position, "not well-formed: " + firstLine(e.getOriginalMessage(), e), e);
    }
  }

  private static YamlNode readValue(JsonParser parser, String file) {
    Position at = position(parser.currentTokenLocation(), file);
    JsonToken token = parser.currentToken();
    switch (token) {
      case START_OBJECT -> {
        Map<String, YamlMap.Entry> entries = new LinkedHashMap<>();
        while (parser.nextToken() == JsonToken.PROPERTY_NAME) {
          String key = parser.currentName();
          Position keyAt = position(parser.currentTokenLocation(), file);
          parser.nextToken();
          YamlNode value = readValue(parser, file);
          if (entries.put(key, new YamlMap.Entry(key, keyAt, value)) != null) {
            throw new InputException(keyAt, "duplicate key '" + key + "'");
          }
        }
        return new YamlMap(at, entries);
      }
      case START_ARRAY -> {
        List<YamlNode> items = new ArrayList<>();
        while (parser.nextToken() != JsonToken.END_ARRAY) {
          items.add(readValue(parser, file));
        }
        return new YamlList(at, items);
      }
      case VALUE_STRING -> {
        return new YamlScalar(at, parser.getString(), YamlScalar.Kind.STRING);
      }
      case VALUE_NUMBER_INT -> {
        return new YamlScalar(at, parser.getText(), YamlScalar.Kind.INTEGER);
      }
      case VALUE_NUMBER_FLOAT -> {
        return new YamlScalar(at, parser.getText(), YamlScalar.Kind.DECIMAL);
      }
      case VALUE_TRUE, VALUE_FALSE -> {
        return new YamlScalar(at, parser.getText(), YamlScalar.Kind.BOOLEAN);
      }
      case VALUE_NULL -> {
        return new YamlScalar(at, "", YamlScalar.Kind.NULL);
      }
      default -> throw new InputException(at, "unsupported value " + token);
    }
  }

  private static Position position(TokenStreamLocation location, String file) {
    return new Position(file, Math.max(location.getLineNr(), 1), Math.max(location.getColumnNr(), 1));
  }

  /** A YAML mark (line and column from 0) as a position (from 1). */
  static Position position(Optional<Mark> mark, String file) {
    return mark.map(m -> new Position(file, m.getLine() + 1, m.getColumn() + 1)).orElse(new Position(file, 1, 1));
  }

  static String firstLine(String message, Exception e) {
    return message == null ? e.getClass().getSimpleName() : message.lines().findFirst().orElse(message).trim();
  }
}
