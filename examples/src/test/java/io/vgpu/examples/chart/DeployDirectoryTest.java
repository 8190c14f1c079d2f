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
 * examples/deploy is the chart rendered with its default values, examples/deploy-kai with {@code
 * vgpu.kai.enabled=true} (vgpu as the isolation layer under KAI Scheduler), and examples/deploy-kai-dialect
 * with {@code vgpu.kaiDialect.enabled=true} and {@code vgpu.kaiDialect.installCRDs=true} (vgpu scheduling
 * KAI's pods, queues and gangs itself; the lab runs scenarios with queues on it), one file per template, and
 * nothing else: this test fails when a file differs from a fresh render, is missing, or is left over.
 * After changing the chart, write the directories anew with
 * {@code ./mvnw -pl examples -am test -Dtest=DeployDirectoryTest -Dsurefire.failIfNoSpecifiedTests=false -Dvgpu.deploy.update=true}.
 */
class DeployDirectoryTest {
  static final Path DEPLOY = Path.of("deploy");
  static final Path DEPLOY_KAI = Path.of("deploy-kai");
  static final Path DEPLOY_KAI_DIALECT = Path.of("deploy-kai-dialect");

  /** The files examples/deploy must hold: file name to content. */
  static Map<String, String> rendered() {
    return rendered(RenderedChart.defaults(), "the chart's default values");
  }

  /** The files examples/deploy-kai must hold: file name to content. */
  static Map<String, String> renderedKai() {
    return rendered(RenderedChart.kai(), "the chart's default values and vgpu.kai.enabled=true");
  }

  /** The files examples/deploy-kai-dialect must hold: file name to content. */
  static Map<String, String> renderedKaiDialect() {
    return rendered(RenderedChart.kaiDialect(), "the chart's default values, vgpu.kaiDialect.enabled=true and vgpu.kaiDialect.installCRDs=true");
  }

  private static Map<String, String> rendered(RenderedChart chart, String values) {
    Map<String, StringBuilder> files = new LinkedHashMap<>();
    for (Document d : chart.documents()) {
      String file = d.template().replace('/', '-');
      String header = header(d.template(), values);
      StringBuilder text = files.computeIfAbsent(file, f -> new StringBuilder(header));
      if (text.length() > header.length()) {
        text.append("---\n");
      }
      text.append(d.yaml().endsWith("\n") ? d.yaml() : d.yaml() + "\n");
    }
    Map<String, String> out = new TreeMap<>();
    files.forEach((file, text) -> out.put(file, text.toString()));
    return out;
  }

  private static String header(String template, String values) {
    return "# Rendered by Helm from charts/vgpu/templates/" + template + " with " + values + " (release "
        + RenderedChart.RELEASE + ", namespace " + RenderedChart.NAMESPACE + ", Kubernetes " + RenderedChart.KUBE_VERSION + ").\n"
        + "# Do not edit: change the chart; DeployDirectoryTest fails until this directory is rendered anew (see README.md).\n";
  }

  @Test
  void theDirectoryIsTheChartsRenderForDefaultValues() throws Exception {
    check(DEPLOY, rendered());
  }

  @Test
  void theKaiDirectoryIsTheChartsRenderInTheKaiRole() throws Exception {
    check(DEPLOY_KAI, renderedKai());
  }

  @Test
  void theKaiDialectDirectoryIsTheChartsRenderWithTheDialect() throws Exception {
    check(DEPLOY_KAI_DIALECT, renderedKaiDialect());
  }

  private static void check(Path deploy, Map<String, String> expected) throws Exception {
    if (Boolean.getBoolean("vgpu.deploy.update")) {
      Files.createDirectories(deploy);
      try (Stream<Path> old = Files.list(deploy)) {
        for (Path file : old.filter(f -> f.toString().endsWith(".yaml")).toList()) {
          Files.delete(file);
        }
      }
      for (Map.Entry<String, String> e : expected.entrySet()) {
        Files.writeString(deploy.resolve(e.getKey()), e.getValue());
      }
    }
    Map<String, String> actual = new TreeMap<>();
    try (Stream<Path> files = Files.list(deploy)) {
      for (Path file : files.filter(f -> f.toString().endsWith(".yaml")).toList()) {
        actual.put(file.getFileName().toString(), Files.readString(file));
      }
    }
    assertThat(actual.keySet()).as("files of examples/" + deploy).containsExactlyElementsOf(expected.keySet());
    for (Map.Entry<String, String> e : expected.entrySet()) {
      assertThat(actual.get(e.getKey())).as("examples/" + deploy + "/" + e.getKey() + " differs from the chart's render").isEqualTo(e.getValue());
    }
  }
}
