package io.vgpu.examples.chart;

import com.marcnuri.helm.Helm;
import com.marcnuri.helm.InstallCommand;
import com.marcnuri.helm.TemplateCommand;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import tools.jackson.databind.JsonNode;
import tools.jackson.dataformat.yaml.YAMLMapper;

/**
 * charts/vgpu rendered by Helm itself (helm-java runs Helm's Go code as a native library): the
 * manifest {@code helm template} prints, split into its objects, each with the template it came from.
 */
public final class RenderedChart {
  /** The chart, from the examples module's directory (where surefire runs). */
  public static final Path CHART = Path.of("../charts/vgpu");
  /** HAMi v2.10.0's values file, as a HAMi user holds it. */
  public static final Path HAMI_VALUES = Path.of("src/test/resources/chart/hami-v2.10.0-values.yaml");
  /** The release name and namespace of every render: HAMi's install instructions'. */
  public static final String RELEASE = "hami";
  /** The namespace of every render. */
  public static final String NAMESPACE = "kube-system";
  /** The Kubernetes version of a render that names none. */
  public static final String KUBE_VERSION = "v1.31.0";

  private static final YAMLMapper YAML = YAMLMapper.builder().build();
  private static final Pattern SOURCE = Pattern.compile("^# Source: vgpu/templates/(\\S+)$", Pattern.MULTILINE);
  private static final Map<Options, RenderedChart> CACHE = new ConcurrentHashMap<>();

  /**
   * One rendered object.
   *
   * @param template the template it came from, e.g. {@code scheduler/deployment.yaml}
   * @param yaml its text as Helm printed it (without the Source comment)
   * @param tree its content
   */
  public record Document(String template, String yaml, JsonNode tree) {
    /** Its kind. */
    public String kind() {
      return tree.path("kind").asString("");
    }

    /** Its name. */
    public String name() {
      return tree.path("metadata").path("name").asString("");
    }
  }

  /**
   * What a render is given.
   *
   * @param valuesFiles values files, in order
   * @param set {@code --set} values, in order
   * @param kubeVersion the cluster's version
   * @param release the release name
   */
  public record Options(List<Path> valuesFiles, Map<String, String> set, String kubeVersion, String release) {
    /** Default values, HAMi's release name and namespace, Kubernetes {@link #KUBE_VERSION}. */
    public static Options defaults() {
      return new Options(List.of(), Map.of(), KUBE_VERSION, RELEASE);
    }

    /** Default values with vgpu in the KAI role ({@code vgpu.kai.enabled=true}), as examples/deploy-kai holds them. */
    public static Options kai() {
      return defaults().with("vgpu.kai.enabled", "true");
    }

    /**
     * Default values with vgpu scheduling KAI's pod dialect and installing KAI's Queue and PodGroup CRDs
     * ({@code vgpu.kaiDialect.enabled=true}, {@code vgpu.kaiDialect.installCRDs=true}), as
     * examples/deploy-kai-dialect holds them.
     */
    public static Options kaiDialect() {
      return defaults().with("vgpu.kaiDialect.enabled", "true").with("vgpu.kaiDialect.installCRDs", "true");
    }

    /** These options with a values file after the others. */
    public Options values(Path file) {
      List<Path> files = new ArrayList<>(valuesFiles);
      files.add(file);
      return new Options(List.copyOf(files), set, kubeVersion, release);
    }

    /** These options with {@code --set key=value} after the others. */
    public Options with(String key, String value) {
      Map<String, String> more = new LinkedHashMap<>(set);
      more.put(key, value);
      return new Options(valuesFiles, java.util.Collections.unmodifiableMap(more), kubeVersion, release);
    }

    /** These options for a cluster of this version. */
    public Options kube(String version) {
      return new Options(valuesFiles, set, version, release);
    }

    /** These options with another release name. */
    public Options named(String name) {
      return new Options(valuesFiles, set, kubeVersion, name);
    }
  }

  private final String manifest;
  private final List<Document> documents;

  private RenderedChart(String manifest, List<Document> documents) {
    this.manifest = manifest;
    this.documents = documents;
  }

  /** The chart rendered with these options (each distinct render once per test run). */
  public static RenderedChart render(Options options) {
    return CACHE.computeIfAbsent(options, RenderedChart::renderNow);
  }

  /** The chart rendered with default values and {@code vgpu.kai.enabled=true}. */
  public static RenderedChart kai() {
    return render(Options.kai());
  }

  /** The chart rendered with {@link Options#kaiDialect()}. */
  public static RenderedChart kaiDialect() {
    return render(Options.kaiDialect());
  }

  /** The chart rendered with default values. */
  public static RenderedChart defaults() {
    return render(Options.defaults());
  }

  /**
   * What the render fails with.
   *
   * @return Helm's error message, or empty when it renders
   */
  public static Optional<String> failure(Options options) {
    try {
      renderNow(options);
      return Optional.empty();
    } catch (IllegalStateException e) {
      return Optional.of(e.getMessage());
    }
  }

  /** The install notes {@code helm install} prints with these options (a client-only dry run). */
  public static String notes(Options options) {
    InstallCommand install = new Helm(CHART).install().withName(options.release()).withNamespace(NAMESPACE).withKubeVersion(options.kubeVersion()).dryRun().clientOnly();
    options.valuesFiles().forEach(install::withValuesFile);
    options.set().forEach(install::set);
    String output = install.call().getOutput();
    int notes = output.indexOf("NOTES:");
    return notes < 0 ? "" : output.substring(notes + "NOTES:".length());
  }

  private static RenderedChart renderNow(Options options) {
    TemplateCommand template = new Helm(CHART).template().withName(options.release()).withNamespace(NAMESPACE).withKubeVersion(options.kubeVersion());
    options.valuesFiles().forEach(template::withValuesFile);
    options.set().forEach(template::set);
    String manifest = template.call();
    List<Document> documents = new ArrayList<>();
    for (String part : manifest.split("(?m)^---\\s*$")) {
      Matcher source = SOURCE.matcher(part);
      if (!source.find()) {
        continue;
      }
      String yaml = part.substring(source.end()).replaceFirst("^\\n", "");
      JsonNode tree = YAML.readTree(yaml);
      if (tree == null || tree.isNull() || tree.isMissingNode() || tree.isEmpty()) {
        continue;
      }
      documents.add(new Document(source.group(1), yaml, tree));
    }
    return new RenderedChart(manifest, List.copyOf(documents));
  }

  /** The manifest as Helm printed it. */
  public String manifest() {
    return manifest;
  }

  /** Every rendered object, in Helm's order. */
  public List<Document> documents() {
    return documents;
  }

  /** The objects of a kind. */
  public List<Document> all(String kind) {
    return documents.stream().filter(d -> d.kind().equals(kind)).toList();
  }

  /** The object of this kind and name. */
  public JsonNode get(String kind, String name) {
    return find(kind, name).orElseThrow(() -> new AssertionError("no " + kind + " " + name + " rendered; rendered: " + documents.stream().map(d -> d.kind() + "/" + d.name()).toList()));
  }

  /** The object of this kind and name, if rendered. */
  public Optional<JsonNode> find(String kind, String name) {
    return documents.stream().filter(d -> d.kind().equals(kind) && d.name().equals(name)).map(Document::tree).findFirst();
  }

  /** A container of a workload's pod template (init containers included). */
  public JsonNode container(String kind, String workload, String container) {
    JsonNode spec = get(kind, workload).path("spec").path("template").path("spec");
    for (String list : List.of("initContainers", "containers")) {
      for (JsonNode c : spec.path(list)) {
        if (c.path("name").asString("").equals(container)) {
          return c;
        }
      }
    }
    throw new AssertionError(kind + " " + workload + " has no container " + container);
  }

  /** A container's args as strings. */
  public static List<String> args(JsonNode container) {
    List<String> args = new ArrayList<>();
    container.path("args").forEach(a -> args.add(a.asString()));
    return args;
  }

  /** The value of {@code --flag=value} among args, if given. */
  public static Optional<String> flag(List<String> args, String flag) {
    return args.stream().filter(a -> a.startsWith(flag + "=")).map(a -> a.substring(flag.length() + 1)).findFirst();
  }

  /** A file of a ConfigMap's data. */
  public String configMapFile(String name, String key) {
    return get("ConfigMap", name).path("data").path(key).asString();
  }

  /** Writes a values file into {@code dir} and returns it. */
  public static Path valuesFile(Path dir, String name, String yaml) throws java.io.IOException {
    Path file = dir.resolve(name);
    Files.writeString(file, yaml);
    return file;
  }
}
