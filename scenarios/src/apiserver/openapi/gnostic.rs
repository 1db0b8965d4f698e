//! The subset of gnostic's `openapi_v2` messages (`openapiv2/OpenAPIv2.proto`) this server
//! fills in, with the proto field numbers. `oneof` members are plain optional fields: the
//! encoding is the same.

use serde_json::{Map, Value};

#[derive(Clone, PartialEq, prost::Message)]
pub struct Document {
    #[prost(string, tag = "1")]
    pub swagger: String,
    #[prost(message, optional, tag = "2")]
    pub info: Option<Info>,
    #[prost(string, repeated, tag = "6")]
    pub consumes: Vec<String>,
    #[prost(string, repeated, tag = "7")]
    pub produces: Vec<String>,
    #[prost(message, optional, tag = "8")]
    pub paths: Option<Paths>,
    #[prost(message, optional, tag = "9")]
    pub definitions: Option<Definitions>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Info {
    #[prost(string, tag = "1")]
    pub title: String,
    #[prost(string, tag = "2")]
    pub version: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Definitions {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSchema>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedSchema {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Schema>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Properties {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSchema>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Schema {
    #[prost(string, tag = "1")]
    pub xref: String,
    #[prost(string, tag = "2")]
    pub format: String,
    #[prost(string, tag = "3")]
    pub title: String,
    #[prost(string, tag = "4")]
    pub description: String,
    #[prost(message, optional, tag = "5")]
    pub default: Option<Any>,
    #[prost(bool, tag = "16")]
    pub unique_items: bool,
    #[prost(string, repeated, tag = "19")]
    pub required: Vec<String>,
    #[prost(message, repeated, tag = "20")]
    pub r#enum: Vec<Any>,
    #[prost(message, optional, boxed, tag = "21")]
    pub additional_properties: Option<Box<AdditionalPropertiesItem>>,
    #[prost(message, optional, tag = "22")]
    pub r#type: Option<TypeItem>,
    #[prost(message, optional, tag = "23")]
    pub items: Option<ItemsItem>,
    #[prost(message, repeated, tag = "24")]
    pub all_of: Vec<Schema>,
    #[prost(message, optional, tag = "25")]
    pub properties: Option<Properties>,
    #[prost(bool, tag = "27")]
    pub read_only: bool,
    #[prost(message, optional, tag = "30")]
    pub example: Option<Any>,
    #[prost(message, repeated, tag = "31")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `oneof { Schema schema = 1; bool boolean = 2; }`
#[derive(Clone, PartialEq, prost::Message)]
pub struct AdditionalPropertiesItem {
    #[prost(message, optional, tag = "1")]
    pub schema: Option<Schema>,
    #[prost(bool, optional, tag = "2")]
    pub boolean: Option<bool>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeItem {
    #[prost(string, repeated, tag = "1")]
    pub value: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ItemsItem {
    #[prost(message, repeated, tag = "1")]
    pub schema: Vec<Schema>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedAny {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Any>,
}

/// `Any { google.protobuf.Any value = 1; string yaml = 2; }`: only the YAML is used.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Any {
    #[prost(string, tag = "2")]
    pub yaml: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Paths {
    #[prost(message, repeated, tag = "1")]
    pub vendor_extension: Vec<NamedAny>,
    #[prost(message, repeated, tag = "2")]
    pub path: Vec<NamedPathItem>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedPathItem {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<PathItem>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PathItem {
    #[prost(message, optional, tag = "2")]
    pub get: Option<Operation>,
    #[prost(message, optional, tag = "3")]
    pub put: Option<Operation>,
    #[prost(message, optional, tag = "4")]
    pub post: Option<Operation>,
    #[prost(message, optional, tag = "5")]
    pub delete: Option<Operation>,
    #[prost(message, optional, tag = "8")]
    pub patch: Option<Operation>,
    #[prost(message, repeated, tag = "9")]
    pub parameters: Vec<ParametersItem>,
    #[prost(message, repeated, tag = "10")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Operation {
    #[prost(string, repeated, tag = "1")]
    pub tags: Vec<String>,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(string, tag = "5")]
    pub operation_id: String,
    #[prost(string, repeated, tag = "6")]
    pub produces: Vec<String>,
    #[prost(string, repeated, tag = "7")]
    pub consumes: Vec<String>,
    #[prost(message, repeated, tag = "8")]
    pub parameters: Vec<ParametersItem>,
    #[prost(message, optional, tag = "9")]
    pub responses: Option<Responses>,
    #[prost(string, repeated, tag = "10")]
    pub schemes: Vec<String>,
    #[prost(message, repeated, tag = "13")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `oneof { Parameter parameter = 1; JsonReference json_reference = 2; }`
#[derive(Clone, PartialEq, prost::Message)]
pub struct ParametersItem {
    #[prost(message, optional, tag = "1")]
    pub parameter: Option<Parameter>,
}

/// `oneof { BodyParameter body_parameter = 1; NonBodyParameter non_body_parameter = 2; }`
#[derive(Clone, PartialEq, prost::Message)]
pub struct Parameter {
    #[prost(message, optional, tag = "1")]
    pub body_parameter: Option<BodyParameter>,
    #[prost(message, optional, tag = "2")]
    pub non_body_parameter: Option<NonBodyParameter>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct BodyParameter {
    #[prost(string, tag = "1")]
    pub description: String,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "3")]
    pub r#in: String,
    #[prost(bool, tag = "4")]
    pub required: bool,
    #[prost(message, optional, tag = "5")]
    pub schema: Option<Schema>,
}

/// `oneof { header = 1; form_data = 2; QueryParameterSubSchema query = 3;
/// PathParameterSubSchema path = 4; }`
#[derive(Clone, PartialEq, prost::Message)]
pub struct NonBodyParameter {
    #[prost(message, optional, tag = "3")]
    pub query_parameter_sub_schema: Option<QueryParameterSubSchema>,
    #[prost(message, optional, tag = "4")]
    pub path_parameter_sub_schema: Option<PathParameterSubSchema>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct QueryParameterSubSchema {
    #[prost(bool, tag = "1")]
    pub required: bool,
    #[prost(string, tag = "2")]
    pub r#in: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(string, tag = "4")]
    pub name: String,
    #[prost(string, tag = "6")]
    pub r#type: String,
    #[prost(bool, tag = "20")]
    pub unique_items: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PathParameterSubSchema {
    #[prost(bool, tag = "1")]
    pub required: bool,
    #[prost(string, tag = "2")]
    pub r#in: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(string, tag = "4")]
    pub name: String,
    #[prost(string, tag = "5")]
    pub r#type: String,
    #[prost(bool, tag = "19")]
    pub unique_items: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Responses {
    #[prost(message, repeated, tag = "1")]
    pub response_code: Vec<NamedResponseValue>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedResponseValue {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<ResponseValue>,
}

/// `oneof { Response response = 1; JsonReference json_reference = 2; }`
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResponseValue {
    #[prost(message, optional, tag = "1")]
    pub response: Option<Response>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Response {
    #[prost(string, tag = "1")]
    pub description: String,
    #[prost(message, optional, tag = "2")]
    pub schema: Option<SchemaItem>,
}

/// `oneof { Schema schema = 1; FileSchema file_schema = 2; }`
#[derive(Clone, PartialEq, prost::Message)]
pub struct SchemaItem {
    #[prost(message, optional, tag = "1")]
    pub schema: Option<Schema>,
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn bool_of(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn strings_of(v: &Value, key: &str) -> Vec<String> {
    match v.get(key) {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect(),
        Some(Value::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    }
}

fn any(v: &Value) -> Any {
    Any {
        yaml: super::yaml(v),
    }
}

fn extensions(map: &Map<String, Value>) -> Vec<NamedAny> {
    map.iter()
        .filter(|(k, _)| k.starts_with("x-"))
        .map(|(k, v)| NamedAny {
            name: k.clone(),
            value: Some(any(v)),
        })
        .collect()
}

fn named_schemas(v: Option<&Value>) -> Vec<NamedSchema> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(name, s)| NamedSchema {
                    name: name.clone(),
                    value: Some(schema(s)),
                })
                .collect()
        })
        .unwrap_or_default()
}

pub fn schema(v: &Value) -> Schema {
    let empty = Map::new();
    let map = v.as_object().unwrap_or(&empty);
    Schema {
        xref: str_of(v, "$ref"),
        format: str_of(v, "format"),
        title: str_of(v, "title"),
        description: str_of(v, "description"),
        default: v.get("default").map(any),
        unique_items: bool_of(v, "uniqueItems"),
        required: strings_of(v, "required"),
        r#enum: v
            .get("enum")
            .and_then(Value::as_array)
            .map(|items| items.iter().map(any).collect())
            .unwrap_or_default(),
        additional_properties: match v.get("additionalProperties") {
            Some(Value::Bool(b)) => Some(Box::new(AdditionalPropertiesItem {
                schema: None,
                boolean: Some(*b),
            })),
            Some(s @ Value::Object(_)) => Some(Box::new(AdditionalPropertiesItem {
                schema: Some(schema(s)),
                boolean: None,
            })),
            _ => None,
        },
        r#type: v.get("type").map(|_| TypeItem {
            value: strings_of(v, "type"),
        }),
        items: match v.get("items") {
            Some(Value::Array(items)) => Some(ItemsItem {
                schema: items.iter().map(schema).collect(),
            }),
            Some(s @ Value::Object(_)) => Some(ItemsItem {
                schema: vec![schema(s)],
            }),
            _ => None,
        },
        all_of: v
            .get("allOf")
            .and_then(Value::as_array)
            .map(|items| items.iter().map(schema).collect())
            .unwrap_or_default(),
        properties: v.get("properties").map(|p| Properties {
            additional_properties: named_schemas(Some(p)),
        }),
        read_only: bool_of(v, "readOnly"),
        example: v.get("example").map(any),
        vendor_extension: extensions(map),
    }
}

fn parameter(v: &Value) -> ParametersItem {
    let p = if str_of(v, "in") == "body" {
        Parameter {
            body_parameter: Some(BodyParameter {
                description: str_of(v, "description"),
                name: str_of(v, "name"),
                r#in: str_of(v, "in"),
                required: bool_of(v, "required"),
                schema: v.get("schema").map(schema),
            }),
            non_body_parameter: None,
        }
    } else if str_of(v, "in") == "path" {
        Parameter {
            body_parameter: None,
            non_body_parameter: Some(NonBodyParameter {
                query_parameter_sub_schema: None,
                path_parameter_sub_schema: Some(PathParameterSubSchema {
                    required: bool_of(v, "required"),
                    r#in: str_of(v, "in"),
                    description: str_of(v, "description"),
                    name: str_of(v, "name"),
                    r#type: str_of(v, "type"),
                    unique_items: bool_of(v, "uniqueItems"),
                }),
            }),
        }
    } else {
        Parameter {
            body_parameter: None,
            non_body_parameter: Some(NonBodyParameter {
                query_parameter_sub_schema: Some(QueryParameterSubSchema {
                    required: bool_of(v, "required"),
                    r#in: str_of(v, "in"),
                    description: str_of(v, "description"),
                    name: str_of(v, "name"),
                    r#type: str_of(v, "type"),
                    unique_items: bool_of(v, "uniqueItems"),
                }),
                path_parameter_sub_schema: None,
            }),
        }
    };
    ParametersItem { parameter: Some(p) }
}

fn parameters(v: &Value) -> Vec<ParametersItem> {
    v.get("parameters")
        .and_then(Value::as_array)
        .map(|items| items.iter().map(parameter).collect())
        .unwrap_or_default()
}

fn operation(v: &Value) -> Operation {
    let empty = Map::new();
    let map = v.as_object().unwrap_or(&empty);
    Operation {
        tags: strings_of(v, "tags"),
        description: str_of(v, "description"),
        operation_id: str_of(v, "operationId"),
        produces: strings_of(v, "produces"),
        consumes: strings_of(v, "consumes"),
        parameters: parameters(v),
        responses: v
            .get("responses")
            .and_then(Value::as_object)
            .map(|r| Responses {
                response_code: r
                    .iter()
                    .map(|(code, resp)| NamedResponseValue {
                        name: code.clone(),
                        value: Some(ResponseValue {
                            response: Some(Response {
                                description: str_of(resp, "description"),
                                schema: resp.get("schema").map(|s| SchemaItem {
                                    schema: Some(schema(s)),
                                }),
                            }),
                        }),
                    })
                    .collect(),
            }),
        schemes: strings_of(v, "schemes"),
        vendor_extension: extensions(map),
    }
}

fn path_item(v: &Value) -> PathItem {
    let empty = Map::new();
    let map = v.as_object().unwrap_or(&empty);
    PathItem {
        get: v.get("get").map(operation),
        put: v.get("put").map(operation),
        post: v.get("post").map(operation),
        delete: v.get("delete").map(operation),
        patch: v.get("patch").map(operation),
        parameters: parameters(v),
        vendor_extension: extensions(map),
    }
}

pub fn document(v: &Value) -> Document {
    Document {
        swagger: str_of(v, "swagger"),
        info: v.get("info").map(|i| Info {
            title: str_of(i, "title"),
            version: str_of(i, "version"),
        }),
        consumes: strings_of(v, "consumes"),
        produces: strings_of(v, "produces"),
        paths: v.get("paths").and_then(Value::as_object).map(|p| Paths {
            vendor_extension: Vec::new(),
            path: p
                .iter()
                .map(|(name, item)| NamedPathItem {
                    name: name.clone(),
                    value: Some(path_item(item)),
                })
                .collect(),
        }),
        definitions: v.get("definitions").map(|d| Definitions {
            additional_properties: named_schemas(Some(d)),
        }),
    }
}
