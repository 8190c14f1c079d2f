package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.NodeList;
import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderArgs;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import tools.jackson.core.JsonParser;
import tools.jackson.core.JsonToken;
import tools.jackson.core.exc.StreamReadException;
import tools.jackson.databind.DeserializationContext;
import tools.jackson.databind.JacksonModule;
import tools.jackson.databind.ValueDeserializer;
import tools.jackson.databind.module.SimpleModule;

/**
 * Reads kube-scheduler's {@code ExtenderArgs} with a streaming parser: the pod as far as the filter
 * reads it ({@link LeanReader#forRequest}), and the candidate names against those of the previous call.
 * kube-scheduler sends the same few thousand names with nearly every filter; while a call's names are
 * the previous call's, character for character, its list is the previous list itself (no string made
 * per name, and the engine's resolution of that list is reused as it stands). Node objects (a
 * cluster-autoscaler dry run) are read as the model reads them.
 *
 * <p>One reader serves one extender; concurrent calls are safe (a call compares against whichever list
 * it finds, and leaves its own).
 */
final class ExtenderArgsReader {
  private final LeanReader pods = LeanReader.forRequest();
  /** The names of the last call, as handed out. */
  private volatile List<String> last = List.of();

  /** The module that makes a mapper read {@link ExtenderArgs} with this reader. */
  JacksonModule module() {
    SimpleModule module = new SimpleModule("vgpu-extender-args");
    module.addDeserializer(ExtenderArgs.class, new ValueDeserializer<ExtenderArgs>() {
      @Override
      public ExtenderArgs deserialize(JsonParser p, DeserializationContext ctxt) {
        return read(p, ctxt);
      }
    });
    return module;
  }

  /** The arguments; the parser is on their {@code START_OBJECT}. Unknown keys are skipped. */
  ExtenderArgs read(JsonParser p, DeserializationContext ctxt) {
    if (p.currentToken() != JsonToken.START_OBJECT) {
      return ctxt.reportInputMismatch(ExtenderArgs.class, "ExtenderArgs must be an object, not %s", p.currentToken());
    }
    Pod pod = null;
    NodeList nodes = null;
    List<String> names = null;
    for (String name = p.nextName(); name != null; name = p.nextName()) {
      p.nextToken();
      switch (name) {
        case "Pod" -> pod = pods.pod(p, ctxt);
        case "Nodes" -> nodes = p.currentToken() == JsonToken.VALUE_NULL ? null : ctxt.readValue(p, NodeList.class);
        case "NodeNames" -> names = names(p);
        default -> p.skipChildren();
      }
    }
    return new ExtenderArgs(pod, nodes, names);
  }

  /** The names of a {@code NodeNames} array; the previous call's list when they are the same. */
  private @Nullable List<String> names(JsonParser p) {
    if (p.currentToken() == JsonToken.VALUE_NULL) {
      return null;
    }
    if (p.currentToken() != JsonToken.START_ARRAY) {
      throw new StreamReadException(p, "NodeNames must be an array, not " + p.currentToken());
    }
    List<String> previous = last;
    int size = previous.size();
    int i = 0;
    List<String> fresh = null;
    for (JsonToken t = p.nextToken(); t != JsonToken.END_ARRAY; t = p.nextToken()) {
      if (t != JsonToken.VALUE_STRING) {
        throw new StreamReadException(p, "NodeNames must hold strings, not " + t);
      }
      if (fresh == null) {
        if (i < size && sameString(p, previous.get(i))) {
          i++;
          continue;
        }
        // The first difference: the names before it are the previous call's own strings.
        fresh = new ArrayList<>(Math.max(size, 16));
        fresh.addAll(previous.subList(0, i));
      }
      fresh.add(p.getString());
      i++;
    }
    if (fresh == null) {
      if (i == size) {
        return previous;
      }
      fresh = previous.subList(0, i);
    }
    List<String> names = List.copyOf(fresh);
    last = names;
    return names;
  }

  /** Whether the parser's current string is {@code s}, compared in the parser's buffer. */
  private static boolean sameString(JsonParser p, String s) {
    int length = p.getStringLength();
    if (length != s.length()) {
      return false;
    }
    char[] chars = p.getStringCharacters();
    int offset = p.getStringOffset();
    for (int k = 0; k < length; k++) {
      if (chars[offset + k] != s.charAt(k)) {
        return false;
      }
    }
    return true;
  }
}
