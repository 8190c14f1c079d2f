package io.vgpu.examples.chart;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.examples.chart.RenderedChart.Document;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * examples/deploy is the chart rendered with its default values, one file per template, and nothing
 * else: this test fails when a file differs from a fresh render, is missing, or is left over. After
 * changing the chart, write the directory anew with
 * {@code ./mvnw -pl examples -am test -Dtest=DeployDirectoryTest -Dsurefire.failIfNoSpecifiedTests=false -Dvgpu.deploy.update=true}.
 */
class DeployDirectoryTest {
  static final Path DEPLOY = Path.of("deploy");

  /** The files the directory must hold: file name to content. */
  static Map<String, String> rendered() {
    Map<String, StringBuilder> files = new LinkedHashMap<>();
    for (Document d : RenderedChart.defaults().documents()) {
      String file = d.template().replace('/', '-');
      StringBuilder text = files.computeIfAbsent(file, f -> new StringBuilder(header(d.template())));
      if (text.length() > header(d.template()).length()) {
        text.append("---\n");
      }
      text.append(d.yaml().endsWith("\n") ? d.yaml() : d.yaml() + "\n");
    }
    Map<String, String> out = new TreeMap<>();
    files.forEach((file, text) -> out.put(file, text.toString()));
    return out;
  }

  private static String header(String template) {
    return "# Rendered by Helm from charts/vgpu/templates/" + template + " with the chart's default values (release "
        + RenderedChart.RELEASE + ", namespace " + RenderedChart.NAMESPACE + ", Kubernetes " + RenderedChart.KUBE_VERSION + ").\n"
        + "# Do not edit: change the chart; DeployDirectoryTest fails until this directory is rendered anew (see README.md).\n";
  }

  @Test
  void theDirectoryIsTheChartsRenderForDefaultValues() throws Exception {
    Map<String, String> expected = rendered();
    if (Boolean.getBoolean("vgpu.deploy.update")) {
      try (Stream<Path> old = Files.list(DEPLOY)) {
        for (Path file : old.filter(f -> f.toString().endsWith(".yaml")).toList()) {
          Files.delete(file);
        }
      }
      for (Map.Entry<String, String> e : expected.entrySet()) {
        Files.writeString(DEPLOY.resolve(e.getKey()), e.getValue());
      }
    }
    Map<String, String> actual = new TreeMap<>();
    try (Stream<Path> files = Files.list(DEPLOY)) {
      for (Path file : files.filter(f -> f.toString().endsWith(".yaml")).toList()) {
        actual.put(file.getFileName().toString(), Files.readString(file));
      }
    }
    assertThat(actual.keySet()).as("files of examples/deploy").containsExactlyElementsOf(expected.keySet());
    for (Map.Entry<String, String> e : expected.entrySet()) {
      assertThat(actual.get(e.getKey())).as("examples/deploy/" + e.getKey() + " differs from the chart's render").isEqualTo(e.getValue());
    }
  }
}
