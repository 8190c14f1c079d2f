package io.vgpu.examples.lab.apiserver;

import io.fabric8.mockwebserver.http.WebSocketListener;
import io.vgpu.k8s.pod.PodJson;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;

/**
 * A watch from a resource version ({@code ?watch=true&resourceVersion=N}), as the API server serves it:
 * only what changed after N. fabric8's mock opens every watch by sending each stored object as ADDED;
 * an informer that has just listed them would decode the whole collection twice (at 50,000 pods, most of
 * its start-up). Those replayed objects, the ones not changed since N, are dropped here; every later
 * event passes.
 */
final class ResourceVersionWatchFilter extends FilteringWatchListener {
  private final long since;

  ResourceVersionWatchFilter(WebSocketListener inner, long since) {
    super(inner);
    this.since = since;
  }

  @Override
  String filter(String text) {
    JsonNode event;
    try {
      event = PodJson.mapper().readTree(text);
    } catch (JacksonException e) {
      return text;
    }
    if (!event.path("type").asString("").equals("ADDED")) {
      return text;
    }
    String version = event.path("object").path("metadata").path("resourceVersion").asString("");
    try {
      return Long.parseLong(version) <= since ? null : text;
    } catch (NumberFormatException e) {
      return text;
    }
  }

  /** The resource version a watch's raw query starts from, or 0 (from now, with every object first) when it names none. */
  static long since(String rawQuery) {
    for (String param : rawQuery.split("&")) {
      if (param.startsWith("resourceVersion=")) {
        try {
          return Math.max(0, Long.parseLong(param.substring("resourceVersion=".length())));
        } catch (NumberFormatException e) {
          return 0;
        }
      }
    }
    return 0;
  }
}
