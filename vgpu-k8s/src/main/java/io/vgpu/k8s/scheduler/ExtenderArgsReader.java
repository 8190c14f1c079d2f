package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.NodeList;
import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderArgs;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.jspecify.annotations.Nullable;
import tools.jackson.core.JacksonException;
import tools.jackson.core.JsonParser;
import tools.jackson.core.JsonToken;
import tools.jackson.core.exc.StreamReadException;
import tools.jackson.databind.json.JsonMapper;

/**
 * Reads kube-scheduler's {@code ExtenderArgs} with a streaming parser: the pod as far as the filter
 * reads it ({@link LeanReader#forRequest}), and the candidate names against those of the previous call.
 * kube-scheduler sends the same few thousand names with nearly every filter: while a call's {@code
 * NodeNames} are byte for byte the previous call's, they are skipped, not decoded, and the call gets the
 * previous list itself (no string made per name; the engine's resolution of that list is reused as it
 * stands). The comparison is made before the parser starts, on the array's bytes as a scan finds them,
 * so the parser never tokenizes an unchanged list. Node objects (a cluster-autoscaler dry run) are read as the model reads them.
 *
 * <p>One reader serves one extender; concurrent calls are safe (a call compares with whichever list it
 * finds, and leaves its own).
 */
final class ExtenderArgsReader {
  /** A {@code NodeNames} array as sent, and the names it holds. */
  private record Names(byte[] json, List<String> names) {}

  private static final byte[] NODE_NAMES = "NodeNames".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] NULL = "null".getBytes(StandardCharsets.US_ASCII);

  private final JsonMapper mapper;
  private final LeanReader pods = LeanReader.forRequest();
  private volatile Names last = new Names(new byte[0], List.of());

  /** A reader whose parsers, and the node objects of a dry run, come from {@code mapper}. */
  ExtenderArgsReader(JsonMapper mapper) {
    this.mapper = mapper;
  }

  /**
   * The arguments in a request body. Unknown keys are skipped.
   *
   * @throws JacksonException when the body is not {@code ExtenderArgs} JSON
   */
  ExtenderArgs read(byte[] body) {
    Names previous = last;
    if (previous.json().length > 0) {
      long span = topLevelArray(body, NODE_NAMES);
      if (span >= 0) {
        int from = (int) (span >>> 32);
        int to = (int) span;
        if (Arrays.equals(body, from, to, previous.json(), 0, previous.json().length)) {
          // The last call's names: the parser never sees them (tokenizing thousands of names was most
          // of what reading a request cost); the rest of the body is read with null in their place.
          byte[] rest = new byte[from + NULL.length + body.length - to];
          System.arraycopy(body, 0, rest, 0, from);
          System.arraycopy(NULL, 0, rest, from, NULL.length);
          System.arraycopy(body, to, rest, from + NULL.length, body.length - to);
          return parse(rest, previous.names());
        }
      }
    }
    return parse(body, null);
  }

  /**
   * Parses {@code ExtenderArgs}; the first {@code NodeNames} is {@code cutOut} where the caller replaced
   * that array, the same bytes as the last call's, by {@code null}.
   */
  private ExtenderArgs parse(byte[] body, @Nullable List<String> cutOut) {
    try (JsonParser p = mapper.createParser(body)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw new StreamReadException(p, "ExtenderArgs must be an object, not " + p.currentToken());
      }
      Pod pod = null;
      NodeList nodes = null;
      List<String> names = null;
      boolean namesSeen = false;
      for (String name = p.nextName(); name != null; name = p.nextName()) {
        p.nextToken();
        switch (name) {
          case "Pod" -> pod = pods.pod(p);
          case "Nodes" -> nodes = p.currentToken() == JsonToken.VALUE_NULL ? null : p.readValueAs(NodeList.class);
          case "NodeNames" -> {
            names = cutOut != null && !namesSeen ? cutOut : names(p, body);
            namesSeen = true;
          }
          default -> p.skipChildren();
        }
      }
      if (p.nextToken() != null) {
        throw new StreamReadException(p, "ExtenderArgs must be one object, followed by " + p.currentToken());
      }
      return new ExtenderArgs(pod, nodes, names);
    }
  }

  /** The names of a {@code NodeNames} array; the previous call's list when the array is the same bytes. */
  private @Nullable List<String> names(JsonParser p, byte[] body) {
    if (p.currentToken() == JsonToken.VALUE_NULL) {
      return null;
    }
    if (p.currentToken() != JsonToken.START_ARRAY) {
      throw new StreamReadException(p, "NodeNames must be an array, not " + p.currentToken());
    }
    long from = p.currentTokenLocation().getByteOffset();
    p.skipChildren();
    long to = p.currentTokenLocation().getByteOffset() + 1;
    if (from < 0 || to > body.length || from >= to) {
      throw new StreamReadException(p, "NodeNames cannot be located in the request body");
    }
    Names previous = last;
    if (Arrays.equals(body, (int) from, (int) to, previous.json(), 0, previous.json().length)) {
      return previous.names();
    }
    List<String> names = new ArrayList<>();
    try (JsonParser array = mapper.createParser(body, (int) from, (int) (to - from))) {
      array.nextToken();
      for (JsonToken t = array.nextToken(); t != JsonToken.END_ARRAY; t = array.nextToken()) {
        if (t != JsonToken.VALUE_STRING) {
          throw new StreamReadException(p, "NodeNames must hold strings, not " + t);
        }
        names.add(array.getString());
      }
    }
    List<String> kept = List.copyOf(names);
    last = new Names(Arrays.copyOfRange(body, (int) from, (int) to), kept);
    return kept;
  }

  /**
   * Where the array value of the top-level object's first member named {@code key} lies in {@code
   * json}: its first byte ({@code [}) in the high half, one past its last ({@code ]}) in the low half;
   * -1 when there is no such member, its value is not an array, its name is written with escapes, or
   * the text is not well formed as far as this scan reads it (the parser then reads the body whole and
   * says what is wrong). Reads bytes only: strings are stepped over, brackets counted.
   */
  static long topLevelArray(byte[] json, byte[] key) {
    int n = json.length;
    int i = whitespace(json, 0);
    if (i >= n || json[i] != '{') {
      return -1;
    }
    int depth = 0;
    while (i < n) {
      byte b = json[i];
      if (b == '"') {
        int start = i + 1;
        i = afterString(json, start);
        if (i < 0) {
          return -1;
        }
        if (depth == 1) {
          int colon = whitespace(json, i);
          if (colon < n && json[colon] == ':' && Arrays.equals(json, start, i - 1, key, 0, key.length)) {
            int value = whitespace(json, colon + 1);
            if (value >= n || json[value] != '[') {
              return -1;
            }
            int end = afterArray(json, value);
            return end < 0 ? -1 : ((long) value << 32) | end;
          }
        }
        continue;
      }
      if (b == '{' || b == '[') {
        depth++;
      } else if (b == '}' || b == ']') {
        if (--depth == 0) {
          return -1;
        }
      }
      i++;
    }
    return -1;
  }

  /** One past the closing quote of the string whose content starts at {@code i}; -1 if it does not end. */
  private static int afterString(byte[] json, int i) {
    for (int n = json.length; i < n; i++) {
      byte b = json[i];
      if (b == '\\') {
        i++;
      } else if (b == '"') {
        return i + 1;
      }
    }
    return -1;
  }

  /** One past the bracket that closes the array opened at {@code i}; -1 if it does not close. */
  private static int afterArray(byte[] json, int i) {
    int depth = 0;
    for (int n = json.length; i < n; ) {
      byte b = json[i];
      if (b == '"') {
        i = afterString(json, i + 1);
        if (i < 0) {
          return -1;
        }
        continue;
      }
      if (b == '[' || b == '{') {
        depth++;
      } else if ((b == ']' || b == '}') && --depth == 0) {
        return i + 1;
      }
      i++;
    }
    return -1;
  }

  private static int whitespace(byte[] json, int i) {
    while (i < json.length && (json[i] == ' ' || json[i] == '\n' || json[i] == '\r' || json[i] == '\t')) {
      i++;
    }
    return i;
  }
}
