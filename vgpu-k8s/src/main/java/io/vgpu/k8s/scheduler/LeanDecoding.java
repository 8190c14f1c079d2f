package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.KubernetesResource;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.WatchEvent;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import org.jspecify.annotations.Nullable;
import tools.jackson.core.JacksonException;
import tools.jackson.core.JsonParser;
import tools.jackson.core.JsonToken;
import tools.jackson.databind.DeserializationContext;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.ValueDeserializer;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.module.SimpleModule;
import tools.jackson.databind.util.TokenBuffer;

/**
 * The ledger's informer client: fabric8's client on the same cluster and credentials, whose decoding
 * reads every pod and node with a {@link LeanReader} into the informer caches' shape. Lists (each page's
 * items) and watch events alike: a watch event's object goes to the lean reader by its {@code kind}
 * without first becoming a JSON tree, which is how fabric8 reads one; any other object (a {@code Status}
 * ending a watch, a ResourceQuota) is read as fabric8 reads it.
 *
 * <p>Only the informers use it: every object it decodes is lean, so the scheduler's own reads of whole
 * pods (a bind's fresh read, a gang's members) go through the scheduler's main client.
 */
final class LeanDecoding {
  private LeanDecoding() {}

  /**
   * A client like {@code base} that decodes pods with {@code pods} and nodes lean, and hands each watch
   * event to the informers on the thread that received it.
   *
   * <p>fabric8 would otherwise pass every event from the watch's socket thread to a pool thread and
   * back (the socket reads the next event only once the last one is handled): two thread wake-ups per
   * event, about seven events per scheduled pod. The handlers this client feeds never block (they
   * update the ledger and return), so the receiving thread may run them; a watch still handles its
   * events one at a time and in order, and the socket still waits for each.
   */
  static KubernetesClient client(KubernetesClient base, LeanReader pods) {
    return new KubernetesClientBuilder()
        .withConfig(base.getConfiguration())
        .withKubernetesSerialization(serialization(pods))
        .withTaskExecutor(Runnable::run)
        .build();
  }

  /** fabric8's serialization with the lean readers of pods, nodes and watch events. */
  static KubernetesSerialization serialization(LeanReader pods) {
    SimpleModule module = new SimpleModule("vgpu-lean-decoding");
    module.addDeserializer(Pod.class, new ValueDeserializer<Pod>() {
      @Override
      public @Nullable Pod deserialize(JsonParser p, DeserializationContext ctxt) {
        return pods.pod(p);
      }
    });
    module.addDeserializer(Node.class, new ValueDeserializer<Node>() {
      @Override
      public @Nullable Node deserialize(JsonParser p, DeserializationContext ctxt) {
        return LeanReader.node(p);
      }
    });
    module.addDeserializer(WatchEvent.class, new WatchEvents(pods));
    return new WatchEventsFromText(JsonMapper.builder().addModule(module).build());
  }

  /**
   * fabric8's serialization, except that a watch event as the watch hands it over (one message, as
   * text) is read from that text by the same mapper: fabric8 encodes the text to UTF-8 again and wraps
   * it in an 8 KiB {@code BufferedInputStream} to look for YAML, per event, which was about 15 % of what
   * the scheduler allocated at 5,000 nodes. Text the direct read refuses goes the way fabric8 reads it,
   * so that its errors (and YAML, which a watch never sends) are fabric8's.
   */
  private static final class WatchEventsFromText extends KubernetesSerialization {
    /**
     * The mapper as fabric8 configured it. Set by {@link #configureMapper}, which the super
     * constructor calls; a field without an initializer keeps what it was set to there.
     */
    private @Nullable ObjectMapper configured;

    WatchEventsFromText(JsonMapper mapper) {
      super(mapper, true);
    }

    @Override
    protected ObjectMapper configureMapper(ObjectMapper mapper) {
      ObjectMapper out = super.configureMapper(mapper);
      configured = out;
      return out;
    }

    @Override
    public <T> T unmarshal(String str, Class<T> type) {
      ObjectMapper mapper = configured;
      if (type == WatchEvent.class && mapper != null) {
        try {
          return mapper.readValue(str, type);
        } catch (JacksonException e) {
          // fabric8's own reading below says why, in its own exception.
        }
      }
      return super.unmarshal(str, type);
    }
  }

  /** {@code {"type": ..., "object": {...}}}, the object read by its kind. */
  private static final class WatchEvents extends ValueDeserializer<WatchEvent> {
    private final LeanReader pods;

    WatchEvents(LeanReader pods) {
      this.pods = pods;
    }

    @Override
    public WatchEvent deserialize(JsonParser p, DeserializationContext ctxt) {
      if (p.currentToken() != JsonToken.START_OBJECT) {
        return ctxt.reportInputMismatch(WatchEvent.class, "a watch event must be an object, not %s", p.currentToken());
      }
      WatchEvent event = new WatchEvent();
      for (String name = p.nextName(); name != null; name = p.nextName()) {
        p.nextToken();
        switch (name) {
          case "type" -> event.setType(LeanReader.string(p));
          case "object" -> event.setObject(object(p, ctxt));
          default -> p.skipChildren();
        }
      }
      return event;
    }

    private @Nullable KubernetesResource object(JsonParser p, DeserializationContext ctxt) {
      if (p.currentToken() == JsonToken.VALUE_NULL) {
        return null;
      }
      if (p.currentToken() != JsonToken.START_OBJECT) {
        return ctxt.reportInputMismatch(KubernetesResource.class, "a watch event's object must be an object, not %s", p.currentToken());
      }
      // The API server writes apiVersion and kind first; the lean readers take over after them.
      String apiVersion = null;
      String kind = null;
      JsonToken t = p.nextToken();
      while (t == JsonToken.PROPERTY_NAME && (p.currentName().equals("apiVersion") || p.currentName().equals("kind"))) {
        boolean isKind = p.currentName().equals("kind");
        p.nextToken();
        String value = LeanReader.string(p);
        if (isKind) {
          kind = value;
        } else {
          apiVersion = value;
        }
        t = p.nextToken();
      }
      boolean core = apiVersion == null || apiVersion.equals("v1");
      if (core && "Pod".equals(kind)) {
        return pods.podFrom(p, apiVersion, kind);
      }
      if (core && "Node".equals(kind)) {
        return LeanReader.nodeFrom(p, apiVersion, kind);
      }
      // Another kind, or one named late: as fabric8 reads it (by kind, which for a pod or node is again
      // a lean reader).
      TokenBuffer buffer = ctxt.bufferForInputBuffering(p);
      buffer.writeStartObject();
      if (apiVersion != null) {
        buffer.writeName("apiVersion");
        buffer.writeString(apiVersion);
      }
      if (kind != null) {
        buffer.writeName("kind");
        buffer.writeString(kind);
      }
      for (; t == JsonToken.PROPERTY_NAME; t = p.nextToken()) {
        buffer.copyCurrentStructure(p);
      }
      buffer.writeEndObject();
      try (JsonParser buffered = buffer.asParserOnFirstToken(ctxt)) {
        return ctxt.readValue(buffered, KubernetesResource.class);
      }
    }
  }
}
