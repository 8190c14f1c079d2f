package io.vgpu.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.k8s.cli.Vgpu;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;
import tools.jackson.dataformat.yaml.YAMLMapper;

/** Runs scenario files through {@code vgpu simulate --output json}, exactly as the command line does. */
final class ScenarioRunner {
  static final Path SCENARIOS = Path.of("scenarios");
  private static final JsonMapper JSON = JsonMapper.builder().build();
  private static final YAMLMapper YAML = YAMLMapper.builder().build();

  private ScenarioRunner() {}

  /** The JSON output of a scenario file of {@code examples/scenarios}. */
  static JsonNode simulate(String scenario) {
    return run(SCENARIOS.resolve(scenario));
  }

  /** The JSON output of the scenario cut after its first {@code events} events: the state at that moment. */
  static JsonNode simulateFirst(String scenario, int events, Path tempDir) {
    try {
      ObjectNode root = (ObjectNode) YAML.readTree(SCENARIOS.resolve(scenario).toFile());
      ArrayNode all = (ArrayNode) root.get("events");
      while (all.size() > events) {
        all.remove(all.size() - 1);
      }
      Path cut = tempDir.resolve("first-" + events + "-" + scenario.replace('/', '-'));
      Files.writeString(cut, YAML.writeValueAsString(root));
      return run(cut);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static JsonNode run(Path file) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = Vgpu.run(new String[] {"simulate", file.toString(), "--output", "json"}, new PrintWriter(out), new PrintWriter(err));
    assertThat(code).as("exit code; stderr: %s", err).isZero();
    assertThat(err.toString()).isEmpty();
    return JSON.readTree(out.toString());
  }

  /** The pod {@code namespace/name} of a simulation's output. */
  static JsonNode pod(JsonNode result, String ref) {
    for (JsonNode pod : result.get("pods")) {
      if ((pod.get("namespace").stringValue() + "/" + pod.get("name").stringValue()).equals(ref)) {
        return pod;
      }
    }
    throw new AssertionError("no pod " + ref + " in " + result.get("pods"));
  }

  /** Whether the output still lists the pod. */
  static boolean hasPod(JsonNode result, String ref) {
    for (JsonNode pod : result.get("pods")) {
      if ((pod.get("namespace").stringValue() + "/" + pod.get("name").stringValue()).equals(ref)) {
        return true;
      }
    }
    return false;
  }

  /** The device {@code uuid} of a simulation's {@code nodes}. */
  static JsonNode device(JsonNode result, String uuid) {
    for (JsonNode node : result.get("nodes")) {
      for (JsonNode device : node.get("devices")) {
        if (device.get("uuid").stringValue().equals(uuid)) {
          return device;
        }
      }
    }
    throw new AssertionError("no device " + uuid);
  }

  /** The UUIDs of every device of the pod's containers, in container and grant order. */
  static List<String> uuids(JsonNode pod) {
    List<String> out = new ArrayList<>();
    for (JsonNode c : pod.get("containers")) {
      for (JsonNode d : c.get("devices")) {
        out.add(d.get("uuid").stringValue());
      }
    }
    return out;
  }
}
