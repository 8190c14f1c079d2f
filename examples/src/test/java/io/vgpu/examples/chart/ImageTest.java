package io.vgpu.examples.chart;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.examples.SchedulerJars;
import io.vgpu.k8s.cli.Vgpu;
import io.vgpu.nvidia.Interposer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import javax.xml.parsers.DocumentBuilderFactory;
import javax.xml.xpath.XPath;
import javax.xml.xpath.XPathFactory;
import org.w3c.dom.Document;

/**
 * The image as its Dockerfile and Jib configuration lay it out, against what the chart runs: no
 * registry or Docker engine is reachable here, so what can be checked is checked: the entrypoint runs
 * the `vgpu` command line (the chart gives only args, starting with the subcommand), the runtime and
 * jars are where the entrypoint looks, the scheduler's AOT cache is trained under the entrypoint's
 * options (and, with a JDK 25 here, the training script runs), libvgpu.so rides inside the vgpu-nvidia jar where the node agent
 * reads it, and the users agree with the pods' security contexts.
 */
class ImageTest {
  private static final Path DOCKERFILE = Path.of("../images/vgpu/Dockerfile");
  private static final Path TRAIN_AOT = Path.of("../images/vgpu/train-aot.sh");

  @TempDir Path temp;
  private static final Pattern ENTRYPOINT = Pattern.compile("(?m)^ENTRYPOINT (\\[.*])$");
  private static final Pattern COPY = Pattern.compile("(?m)^COPY (?:--from=\\S+ )?(\\S+) (\\S+)$");

  private static List<String> entrypoint() throws Exception {
    Matcher m = ENTRYPOINT.matcher(Files.readString(DOCKERFILE));
    assertThat(m.find()).as("ENTRYPOINT in exec form").isTrue();
    List<String> entry = new ArrayList<>();
    JsonMapper.builder().build().readTree(m.group(1)).forEach(n -> entry.add(n.asString()));
    return entry;
  }

  private static List<String> copiedTo() throws Exception {
    List<String> targets = new ArrayList<>();
    Matcher m = COPY.matcher(Files.readString(DOCKERFILE));
    while (m.find()) {
      targets.add(m.group(2));
    }
    return targets;
  }

  @Test
  void theEntrypointRunsTheCommandLineFromTheJarsAndRuntimeTheImageHolds() throws Exception {
    List<String> entry = entrypoint();
    assertThat(entry.get(entry.size() - 1)).isEqualTo(Vgpu.class.getName());
    String java = entry.get(0);
    List<String> copied = copiedTo();
    assertThat(copied).anyMatch(dir -> java.startsWith(dir + "/bin/java"));
    // The class path is the argument file train-aot.sh writes from the jars, run in the image on its prefix.
    Matcher training = Pattern.compile("(?m)^RUN (\\S+/train-aot\\.sh) (\\S+)$").matcher(Files.readString(DOCKERFILE));
    assertThat(training.find()).as("the Dockerfile runs train-aot.sh").isTrue();
    String prefix = training.group(2);
    assertThat(copied).contains(prefix + "/lib", training.group(1));
    assertThat(entry).contains("@" + prefix + "/classpath", "-XX:AOTCache=" + prefix + "/scheduler.aot");
    assertThat(Files.readString(TRAIN_AOT)).contains("\"$prefix/classpath\"", "-XX:AOTCacheOutput=\"$prefix/scheduler.aot\"", "-XX:AOTMode=on");
    // The runtime and the jars come from make-jre.sh, which derives the modules with jdeps.
    assertThat(Files.readString(DOCKERFILE)).contains("vgpu-native/scripts/make-jre.sh", "/src/vgpu-native/target/gpu-check/java/jre", "/src/vgpu-native/target/gpu-check/java/lib");
    assertThat(Files.readString(Path.of("../vgpu-native/scripts/make-jre.sh"))).contains("DEST=$HERE/target/gpu-check/java", "\"$DEST/jre\"", "\"$DEST/lib/\"");
  }

  @Test
  void theCacheIsTrainedUnderTheEntrypointsOwnOptions() throws Exception {
    List<String> entry = entrypoint();
    List<String> options = entry.subList(1, entry.size()).stream().takeWhile(a -> a.startsWith("-")).filter(a -> !a.startsWith("-XX:AOTCache=")).toList();
    Matcher trained = Pattern.compile("(?m)^options=\\((.*)\\)$").matcher(Files.readString(TRAIN_AOT));
    assertThat(trained.find()).isTrue();
    assertThat(List.of(trained.group(1).split(" "))).as("a cache is made for one collector and one set of options").isEqualTo(options);
  }

  /**
   * train-aot.sh as the image's last stage runs it, on a prefix laid out as the image's: JDK 25 for the
   * runtime, the scheduler's jars in lib. It writes the class path file and a cache that a JVM with the
   * entrypoint's options maps (the script itself checks that with -XX:AOTMode=on).
   */
  @Test
  void theTrainingScriptWritesACacheTheEntrypointsJvmMaps() throws Exception {
    List<Path> jars = SchedulerJars.onJdk25();
    Path prefix = temp.resolve("opt/vgpu");
    Path lib = Files.createDirectories(prefix.resolve("lib"));
    Files.createSymbolicLink(prefix.resolve("jre"), SchedulerJars.JDK_25);
    for (Path jar : jars) {
      Files.copy(jar, lib.resolve(jar.getFileName()));
    }

    Process training = new ProcessBuilder("bash", TRAIN_AOT.toAbsolutePath().toString(), prefix.toString()).redirectErrorStream(true).start();
    String out = new String(training.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    assertThat(training.waitFor(3, java.util.concurrent.TimeUnit.MINUTES)).isTrue();

    assertThat(training.exitValue()).as(out).isZero();
    assertThat(out).contains("warm-up only:", "train-aot: " + prefix.resolve("scheduler.aot"));
    String classPath = Files.readString(prefix.resolve("classpath")).trim();
    assertThat(classPath).startsWith("-cp " + lib + "/");
    List<String> listed = List.of(classPath.substring("-cp ".length()).split(":"));
    assertThat(listed).hasSize(jars.size()).isSorted();
  }

  @Test
  void theChartsContainersGiveTheSubcommandAsArgsToTheEntrypoint() {
    RenderedChart chart = RenderedChart.defaults();
    for (String[] c : new String[][] {{"Deployment", "hami-scheduler", "certificates"}, {"Deployment", "hami-scheduler", "vgpu-scheduler-extender"},
        {"DaemonSet", "hami-device-plugin", "device-plugin"}}) {
      JsonNode container = chart.container(c[0], c[1], c[2]);
      assertThat(container.has("command")).as(c[2] + " keeps the image's entrypoint").isFalse();
      assertThat(container.path("image").asString()).isEqualTo("vgpu:0.1.0");
    }
  }

  @Test
  void libvgpuIsInsideTheVgpuNvidiaJarWhereTheNodeAgentInstallsItFrom() {
    assertThat(Interposer.resource()).isEqualTo("io/vgpu/nvidia/native/linux-x86_64/libvgpu.so");
    assertThat(Interposer.bundled()).as(Interposer.resource() + " on the class path").isTrue();
    // ...and the node agent installs it to HOOK_PATH/vgpu, the host directory the chart mounts at the same path.
    JsonNode agent = RenderedChart.defaults().container("DaemonSet", "hami-device-plugin", "device-plugin");
    String hook = "";
    for (JsonNode env : agent.path("env")) {
      if (env.path("name").asString().equals("HOOK_PATH")) {
        hook = env.path("value").asString();
      }
    }
    assertThat(ChartTest.mountOf(agent, hook + "/vgpu/libvgpu.so").path("mountPath").asString()).isEqualTo(hook + "/vgpu");
  }

  @Test
  void theImagesUserIsTheSchedulerPodsAndTheNodeAgentRunsAsRoot() throws Exception {
    Matcher user = Pattern.compile("(?m)^USER (\\d+):(\\d+)$").matcher(Files.readString(DOCKERFILE));
    assertThat(user.find()).isTrue();
    RenderedChart chart = RenderedChart.defaults();
    JsonNode scheduler = chart.get("Deployment", "hami-scheduler").path("spec").path("template").path("spec").path("securityContext");
    assertThat(scheduler.path("runAsUser").asString()).isEqualTo(user.group(1));
    assertThat(scheduler.path("runAsNonRoot").asBoolean()).isTrue();
    JsonNode agent = chart.get("DaemonSet", "hami-device-plugin").path("spec").path("template").path("spec").path("securityContext");
    assertThat(agent.path("runAsUser").asInt(-1)).isZero();
  }

  @Test
  void jibBuildsTheSameEntrypointOnlyWhenAskedTo() throws Exception {
    Document pom = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(Path.of("../vgpu-k8s/pom.xml").toFile());
    XPath xpath = XPathFactory.newInstance().newXPath();
    String profile = "/project/profiles/profile[id='image']";
    assertThat(xpath.evaluate("count(" + profile + ")", pom)).isEqualTo("1");
    assertThat(xpath.evaluate("count(" + profile + "/activation)", pom)).as("opt-in: CI never needs a registry").isEqualTo("0");
    String jib = profile + "/build/plugins/plugin[artifactId='jib-maven-plugin']/configuration/container";
    assertThat(xpath.evaluate(jib + "/mainClass", pom)).isEqualTo(Vgpu.class.getName());
    Matcher user = Pattern.compile("(?m)^USER (\\S+)$").matcher(Files.readString(DOCKERFILE));
    assertThat(user.find()).isTrue();
    assertThat(xpath.evaluate(jib + "/user", pom)).isEqualTo(user.group(1));
  }
}
