"""The graph IR from Python: nodes, fields, ops, modules, structural equality."""

import numpy as np
import pytest

import kiln
import kiln.ir as ir


@pytest.fixture(scope="module")
def relu():
    name = "test_python.relu"
    return ir.Op(name) if name in ir.list_ops() else ir.register_op(name, pattern_kind=0)


def tensor_type(*shape):
    return ir.TensorType(shape, "float32")


def test_nodes_expose_their_fields(relu):
    x = ir.Var("x", tensor_type(1, 3))
    call = ir.Call(relu, [x], {"alpha": 0.5})
    assert isinstance(call, ir.Call)
    assert call.op.same_as(relu)
    assert call.args[0].same_as(x)
    assert call.attrs["alpha"] == 0.5
    assert [dim.value for dim in x.type_annotation.shape] == [1, 3]
    assert x.type_annotation.dtype == "float32"
    with pytest.raises(AttributeError, match="has no field 'nope'"):
        call.nope


def test_control_flow_nodes_are_built_and_read_from_python(relu):
    cond = ir.Var("c", ir.TensorType((), "bool"))
    x = ir.Var("x", tensor_type(3))
    branch = ir.If(cond, ir.Function([], ir.Call(relu, [x])), ir.Function([], x))
    assert branch.cond.same_as(cond) and branch.else_branch.body.same_as(x)
    params = [ir.Var("i"), ir.Var("cond"), ir.Var("acc")]
    body = ir.Function(params, ir.Tuple([params[1], ir.Call(relu, [params[2]]), params[2]]))
    loop = ir.Loop(ir.Var("n", ir.TensorType((), "int64")), cond, [x], body, "n_iter * 2")
    assert loop.initial[0].same_as(x) and loop.body.same_as(body)
    assert "%0, iterations=n_iter * 2);" in repr(loop)
    with pytest.raises(ValueError, match="takes no parameters"):
        ir.If(cond, body, ir.Function([], x))


def test_expressions_expose_their_checked_type():
    from kiln import transform

    def body(mod):
        (main,) = list(mod.functions.values())
        return main.body

    mod = ir.ParseModule("def @main(%x: Tensor[(2, 3), float32]) { nn.relu(%x) }", [])
    assert body(mod).checked_type is None  # before InferType
    result = body(transform.InferType()(mod)).checked_type
    assert [dim.value for dim in result.shape] == [2, 3] and result.dtype == "float32"


def test_constant_shares_numpy_memory():
    data = np.arange(6, dtype="float32").reshape(2, 3)
    constant = ir.Constant(data)
    data[0, 0] = 42.0
    assert constant.data.numpy()[0, 0] == 42.0


def test_unknown_op_suggests_registered_names(relu):
    with pytest.raises(kiln.KeyError, match="did you mean.*test_python.relu"):
        ir.Op("test_python.rel")


def test_ops_registered_from_python_keep_their_attributes(relu):
    assert ir.op_attrs("test_python.relu")["pattern_kind"] == 0
    assert "test_python.relu" in ir.list_ops()
    with pytest.raises(kiln.KeyError):
        ir.register_op("test_python.relu")


def test_invalid_nodes_are_rejected():
    x = ir.Var("x")
    with pytest.raises(kiln.IndexError):
        ir.TupleGetItem(ir.Tuple([x]), -1)
    with pytest.raises(kiln.TypeError):
        ir.Function([x], x, None, {"Compiler": 3})


def test_structural_equality_maps_bound_variables(relu):
    x, y = ir.Var("x", tensor_type(4)), ir.Var("y", tensor_type(4))
    f = ir.Function([x], ir.Call(relu, [x]))
    g = ir.Function([y], ir.Call(relu, [y]))
    h = ir.Function([y], ir.Call(relu, [x]))  # x is free here
    assert ir.structural_equal(f, g)
    assert ir.structural_hash(f) == ir.structural_hash(g)
    assert not ir.structural_equal(f, h)


def test_modules_add_and_look_up_functions(relu):
    x = ir.Var("x")
    f = ir.Function([x], ir.Call(relu, [x]))
    module = ir.IRModule({"main": f})
    assert module["main"].same_as(f)
    bigger = module.add("other", f)
    with pytest.raises(kiln.KeyError):
        module["other"]  # adding returned a new module; this one is unchanged
    assert bigger["other"].same_as(f)
    with pytest.raises(kiln.KeyError):
        bigger.add("main", f)


def _tile_relation(op, arg_types, attrs):
    shape = [dim.value for dim in arg_types[0].shape]
    shape[0] *= attrs["repeats"]
    return ir.TensorType(shape, arg_types[0].dtype)


@pytest.fixture(scope="module")
def tile():
    name = "test_python.tile"
    if name in ir.list_ops():
        return ir.Op(name)
    return ir.register_op(
        name,
        inputs=["data"],
        attrs={"repeats": ("int", 1), "label": ("str", None), "scales": "floats"},
        pattern="injective",
        type_relation=_tile_relation,
    )


def test_python_ops_declare_a_schema_and_pattern(tile, relu):
    assert ir.OpPattern(tile) == "injective"
    schema = ir.OpSchema(tile)
    assert list(schema["inputs"]) == ["data"]
    attrs = {field["name"]: dict(field.items()) for field in schema["attrs"]}
    assert attrs["repeats"] == {"name": "repeats", "kind": "int", "default": 1}
    assert attrs["label"]["default"] is None
    assert "default" not in attrs["scales"]
    assert ir.OpSchema(relu) is None  # registered without inputs or attrs: anything goes


def test_python_op_schema_rejects_bad_attributes(tile):
    x = ir.Var("x", tensor_type(2, 3))
    with pytest.raises(kiln.ValueError, match="has no attribute 'repeat'; did you mean 'repeats'"):
        ir.Call(tile, [x], {"repeat": 2, "scales": [1]})
    with pytest.raises(kiln.TypeError, match="attribute 'repeats' must be int"):
        ir.Call(tile, [x], {"repeats": "two", "scales": [1]})
    with pytest.raises(kiln.ValueError, match="needs attribute 'scales'"):
        ir.Call(tile, [x])
    with pytest.raises(kiln.ValueError, match="takes 1 argument"):
        ir.Call(tile, [x, x], {"scales": [1]})
    call = ir.Call(tile, [x], {"scales": [1, 2]})
    assert call.attrs["repeats"] == 1 and call.attrs["label"] is None
    assert list(call.attrs["scales"]) == [1.0, 2.0]


def test_python_type_relation_is_used_by_infer_call_type(tile):
    call = ir.Call(tile, [ir.Var("x", tensor_type(2, 3))], {"repeats": 3, "scales": []})
    result = ir.InferCallType(tile, [tensor_type(2, 3)], call.attrs)
    assert ir.structural_equal(result, tensor_type(6, 3))


def test_core_op_type_relations_are_reachable_from_python():
    call = ir.Call("nn.max_pool2d", [ir.Var("x", tensor_type(1, 3, 8, 8))], {"pool_size": [2, 2]})
    result = ir.InferCallType(call.op, [tensor_type(1, 3, 8, 8)], call.attrs)
    assert ir.structural_equal(result, tensor_type(1, 3, 7, 7))
    assert ir.OpPattern(call.op) == "out_elemwise_fusable"


def test_register_op_rejects_unknown_kinds_and_patterns():
    with pytest.raises(kiln.ValueError, match="unknown attribute kind 'tensor'.*ints"):
        ir.register_op("test_python.bad_kind", attrs={"x": "tensor"})
    with pytest.raises(kiln.ValueError, match="unknown op pattern 'fused'"):
        ir.register_op("test_python.bad_pattern", pattern="fused")
