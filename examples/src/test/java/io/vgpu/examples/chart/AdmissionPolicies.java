package io.vgpu.examples.chart;

import com.google.common.collect.ImmutableList;
import com.google.common.collect.ImmutableSet;
import dev.cel.common.CelValidationException;
import dev.cel.common.CelValidationResult;
import dev.cel.common.types.CelType;
import dev.cel.common.types.CelTypeProvider;
import dev.cel.common.types.ListType;
import dev.cel.common.types.MapType;
import dev.cel.common.types.SimpleType;
import dev.cel.common.types.StructType;
import dev.cel.compiler.CelCompiler;
import dev.cel.compiler.CelCompilerFactory;
import dev.cel.parser.CelStandardMacro;
import dev.cel.runtime.CelEvaluationException;
import dev.cel.runtime.CelRuntime;
import dev.cel.runtime.CelRuntimeFactory;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import tools.jackson.databind.JsonNode;

/**
 * The chart's ValidatingAdmissionPolicies applied the way kube-apiserver applies them, in test code: a
 * request matches a policy by its resource rules and match conditions, then the policy's variables are
 * computed in order and its validations checked; the first that fails denies the request with its
 * messageExpression (or message). Expressions are evaluated by dev.cel with {@code object}, {@code
 * oldObject}, {@code request} and {@code variables} as dyn, as the lab's API server does.
 *
 * <p>It also compiles every expression twice, as kube-apiserver does: once as it runs them ({@code object}
 * and {@code oldObject} dyn, {@code request} typed), where a validation must be exactly bool and a
 * messageExpression exactly string or the API server refuses to run the policy; and once against the
 * typed kinds the policy matches (the fields of Pod and Node the policies read), where an error would be
 * a type-checking warning in the policy's status.
 */
final class AdmissionPolicies {
  private static final CelRuntime RUNTIME = CelRuntimeFactory.standardCelRuntimeBuilder().build();
  private static final CelCompiler DYN = compiler(SimpleType.DYN, SimpleType.DYN, SimpleType.DYN);

  private static final MapType STRINGS = MapType.create(SimpleType.STRING, SimpleType.STRING);
  private static final StructType OBJECT_META = struct("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
      Map.of("name", SimpleType.STRING, "namespace", SimpleType.STRING, "uid", SimpleType.STRING, "resourceVersion", SimpleType.STRING, "annotations", STRINGS, "labels", STRINGS));
  /** Pod, Node and KAI's BindRequest, with the fields a policy could mean to read: a misspelt or wrong-kind field fails. */
  static final Map<String, StructType> KINDS = Map.of(
      "bindrequests", struct("run.ai.scheduling.v1alpha2.BindRequest", Map.of("apiVersion", SimpleType.STRING, "kind", SimpleType.STRING, "metadata", OBJECT_META,
          "spec", struct("run.ai.scheduling.v1alpha2.BindRequestSpec", Map.of("selectedNode", SimpleType.STRING, "selectedGPUGroups", ListType.create(SimpleType.STRING),
              "receivedResourceType", SimpleType.STRING)))),
      "pods", struct("io.k8s.api.core.v1.Pod", Map.of("apiVersion", SimpleType.STRING, "kind", SimpleType.STRING, "metadata", OBJECT_META,
          "spec", struct("io.k8s.api.core.v1.PodSpec", Map.of("nodeName", SimpleType.STRING, "schedulerName", SimpleType.STRING, "containers", ListType.create(SimpleType.DYN))),
          "status", struct("io.k8s.api.core.v1.PodStatus", Map.of("phase", SimpleType.STRING)))),
      "nodes", struct("io.k8s.api.core.v1.Node", Map.of("apiVersion", SimpleType.STRING, "kind", SimpleType.STRING, "metadata", OBJECT_META,
          "spec", struct("io.k8s.api.core.v1.NodeSpec", Map.of("podCIDR", SimpleType.STRING, "providerID", SimpleType.STRING, "unschedulable", SimpleType.BOOL)),
          "status", struct("io.k8s.api.core.v1.NodeStatus", Map.of("phase", SimpleType.STRING)))));
  /** The request as kube-apiserver types it for CEL (k8s.io/apiserver's BuildRequestType), in part. */
  static final StructType REQUEST = struct("kubernetes.AdmissionRequest", Map.of(
      "name", SimpleType.STRING, "namespace", SimpleType.STRING, "operation", SimpleType.STRING, "subResource", SimpleType.STRING, "dryRun", SimpleType.BOOL,
      "userInfo", struct("kubernetes.UserInfo", Map.of("username", SimpleType.STRING, "uid", SimpleType.STRING, "groups", ListType.create(SimpleType.STRING),
          "extra", MapType.create(SimpleType.STRING, ListType.create(SimpleType.STRING))))));

  /**
   * One write as admission sees it.
   *
   * @param group the resource's API group ("" for the core group)
   * @param version the resource's API version
   * @param resource the resource, e.g. {@code pods}
   * @param subResource its subresource, or ""
   * @param object the object after the write
   * @param oldObject the object before it
   * @param request the request: operation, namespace, name, subResource, userInfo
   */
  record Write(String group, String version, String resource, String subResource, Map<String, Object> object, Map<String, Object> oldObject, Map<String, Object> request) {
    /** A write to a resource of the core group, v1. */
    Write(String resource, String subResource, Map<String, Object> object, Map<String, Object> oldObject, Map<String, Object> request) {
      this("", "v1", resource, subResource, object, oldObject, request);
    }
  }

  /**
   * A policy's refusal.
   *
   * @param policy the policy's name
   * @param message what the API server answers
   */
  record Denial(String policy, String message) {}

  private final List<JsonNode> policies;

  AdmissionPolicies(List<JsonNode> policies) {
    this.policies = List.copyOf(policies);
  }

  /** The first refusal of any policy, or empty when every policy admits the write. */
  Optional<Denial> admit(Write write) {
    for (JsonNode policy : policies) {
      Optional<String> refused = admit(policy, write);
      if (refused.isPresent()) {
        return Optional.of(new Denial(policy.path("metadata").path("name").asString(), refused.get()));
      }
    }
    return Optional.empty();
  }

  /** Whether this policy's resource rules and match conditions select the write. */
  boolean selects(JsonNode policy, Write write) {
    String resource = write.subResource().isEmpty() ? write.resource() : write.resource() + "/" + write.subResource();
    boolean matched = false;
    for (JsonNode rule : policy.path("spec").path("matchConstraints").path("resourceRules")) {
      matched |= contains(rule.path("apiGroups"), write.group()) && (contains(rule.path("apiVersions"), write.version()) || contains(rule.path("apiVersions"), "*"))
          && contains(rule.path("operations"), String.valueOf(write.request().get("operation"))) && contains(rule.path("resources"), resource);
    }
    if (!matched) {
      return false;
    }
    for (JsonNode condition : policy.path("spec").path("matchConditions")) {
      if (!Boolean.TRUE.equals(evaluate(condition.path("expression").asString(), write, Map.of()))) {
        return false;
      }
    }
    return true;
  }

  private Optional<String> admit(JsonNode policy, Write write) {
    if (!selects(policy, write)) {
      return Optional.empty();
    }
    Map<String, Object> variables = new LinkedHashMap<>();
    for (JsonNode variable : policy.path("spec").path("variables")) {
      variables.put(variable.path("name").asString(), evaluate(variable.path("expression").asString(), write, variables));
    }
    for (JsonNode validation : policy.path("spec").path("validations")) {
      if (Boolean.TRUE.equals(evaluate(validation.path("expression").asString(), write, variables))) {
        continue;
      }
      if (validation.has("messageExpression")) {
        Object message = evaluate(validation.path("messageExpression").asString(), write, variables);
        if (message instanceof String text && !text.isBlank()) {
          return Optional.of(text);
        }
      }
      return Optional.of(validation.path("message").asString());
    }
    return Optional.empty();
  }

  private static Object evaluate(String expression, Write write, Map<String, Object> variables) {
    try {
      return RUNTIME.createProgram(DYN.compile(expression).getAst())
          .eval(Map.of("object", write.object(), "oldObject", write.oldObject(), "request", write.request(), "variables", variables));
    } catch (CelValidationException | CelEvaluationException e) {
      throw new AssertionError("CEL " + expression + ": " + e.getMessage(), e);
    }
  }

  private static boolean contains(JsonNode list, String value) {
    for (JsonNode item : list) {
      if (item.asString("").equals(value)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Compiles every expression of a policy with {@code object} and {@code oldObject} of this type and
   * {@code request} typed, each variable visible to those after it with the type it compiled to.
   *
   * @return each expression's problem, as "field: error" ("" when none); a validation not of type bool
   *     or a messageExpression not of type string is a problem too
   */
  static List<String> typeCheck(JsonNode policy, CelType object) {
    List<String> problems = new ArrayList<>();
    JsonNode spec = policy.path("spec");
    int i = 0;
    for (JsonNode condition : spec.path("matchConditions")) {
      check(compiler(object, REQUEST, SimpleType.DYN), "matchConditions[" + i++ + "]", condition.path("expression").asString(), SimpleType.BOOL, problems);
    }
    Map<String, CelType> variables = new LinkedHashMap<>();
    for (JsonNode variable : spec.path("variables")) {
      String name = variable.path("name").asString();
      CelValidationResult result = compiler(object, REQUEST, variablesType(variables)).compile(variable.path("expression").asString());
      if (result.hasError()) {
        problems.add("variables." + name + ": " + result.getErrorString());
        variables.put(name, SimpleType.DYN);
      } else {
        variables.put(name, resultType(result));
      }
    }
    CelCompiler validations = compiler(object, REQUEST, variablesType(variables));
    i = 0;
    for (JsonNode validation : spec.path("validations")) {
      check(validations, "validations[" + i + "].expression", validation.path("expression").asString(), SimpleType.BOOL, problems);
      if (validation.has("messageExpression")) {
        check(validations, "validations[" + i + "].messageExpression", validation.path("messageExpression").asString(), SimpleType.STRING, problems);
      }
      i++;
    }
    return problems;
  }

  private static void check(CelCompiler compiler, String field, String expression, CelType expected, List<String> problems) {
    CelValidationResult result = compiler.compile(expression);
    if (result.hasError()) {
      problems.add(field + ": " + result.getErrorString());
    } else if (!resultType(result).equals(expected)) {
      problems.add(field + ": of type " + resultType(result) + ", not " + expected);
    }
  }

  private static CelType resultType(CelValidationResult result) {
    try {
      return result.getAst().getResultType();
    } catch (CelValidationException e) {
      throw new AssertionError(e.getMessage(), e);
    }
  }

  private static CelType variablesType(Map<String, CelType> variables) {
    return variables.isEmpty() ? SimpleType.DYN : struct("kubernetes.variables", variables);
  }

  private static CelCompiler compiler(CelType object, CelType request, CelType variables) {
    List<CelType> types = new ArrayList<>();
    collect(object, types);
    collect(request, types);
    collect(variables, types);
    return CelCompilerFactory.standardCelCompilerBuilder()
        .setStandardMacros(CelStandardMacro.STANDARD_MACROS)
        .setTypeProvider(new Types(types))
        .addVar("object", object)
        .addVar("oldObject", object)
        .addVar("request", request)
        .addVar("variables", variables)
        .build();
  }

  /** This type and every struct type within it. */
  private static void collect(CelType type, List<CelType> into) {
    if (type instanceof StructType struct && !into.contains(struct)) {
      into.add(struct);
      struct.fields().forEach(f -> collect(f.type(), into));
    }
    type.parameters().forEach(p -> collect(p, into));
  }

  private static StructType struct(String name, Map<String, CelType> fields) {
    Map<String, CelType> copy = new LinkedHashMap<>(fields);
    return StructType.create(name, ImmutableSet.copyOf(copy.keySet()), field -> Optional.ofNullable(copy.get(field)));
  }

  /** The struct types the compiler may look up by name. */
  private record Types(ImmutableList<CelType> types) implements CelTypeProvider {
    Types(List<CelType> types) {
      this(ImmutableList.copyOf(types));
    }

    @Override
    public Optional<CelType> findType(String name) {
      return types.stream().filter(t -> t.name().equals(name)).findFirst();
    }
  }
}
