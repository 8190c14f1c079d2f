package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.NodeList;
import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderArgs;
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
 * stands). Node objects (a cluster-autoscaler dry run) are read as the model reads them.
 *
 * <p>One reader serves one extender; concurrent calls are safe (a call compares with whichever list it
 * finds, and leaves its own).
 */
final class ExtenderArgsReader {
  /** A {@code NodeNames} array as sent, and the names it holds. */
  private record Names(byte[] json, List<String> names) {}

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
    try (JsonParser p = mapper.createParser(body)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw new StreamReadException(p, "ExtenderArgs must be an object, not " + p.currentToken());
      }
      Pod pod = null;
      NodeList nodes = null;
      List<String> names = null;
      for (String name = p.nextName(); name != null; name = p.nextName()) {
        p.nextToken();
        switch (name) {
          case "Pod" -> pod = pods.pod(p);
          case "Nodes" -> nodes = p.currentToken() == JsonToken.VALUE_NULL ? null : p.readValueAs(NodeList.class);
          case "NodeNames" -> names = names(p, body);
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
}
