package io.vgpu.examples.lab;

import io.vgpu.k8s.pod.PodJson;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** What {@code --keep} leaves besides the logs and container output: the API objects at the end. */
final class LabKeep {
  private LabKeep() {}

  static void writeApiObjects(LabCluster cluster, LabWorkspace workspace) {
    Path dir = workspace.directory("api");
    var writer = PodJson.mapper().writerWithDefaultPrettyPrinter();
    try {
      Files.writeString(dir.resolve("pods.json"), writer.writeValueAsString(cluster.client().pods().inAnyNamespace().list()));
      Files.writeString(dir.resolve("nodes.json"), writer.writeValueAsString(cluster.client().nodes().list()));
      Files.writeString(dir.resolve("events.json"), writer.writeValueAsString(cluster.client().v1().events().inAnyNamespace().list()));
      Files.writeString(dir.resolve("leases.json"), writer.writeValueAsString(cluster.client().leases().inAnyNamespace().list()));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the API objects to " + dir, e);
    }
  }
}
