"""The Thrift structs of SAI's switch_sai.thrift that the saitests build and read, as plain classes: keyword
construction with every field defaulting to None (as Thrift's generated Python does), attribute access,
equality by value. Unknown fields are refused by name, so a typo or an unsupported struct field shows up
instead of being silently ignored."""


class _Struct:
    FIELDS = ()

    def __init__(self, *args, **kwargs):
        if len(args) > len(self.FIELDS):
            raise TypeError("%s takes at most %d positional fields, got %d"
                            % (type(self).__name__, len(self.FIELDS), len(args)))
        for name, value in zip(self.FIELDS, args):
            kwargs.setdefault(name, value)
        unknown = sorted(set(kwargs) - set(self.FIELDS))
        if unknown:
            raise TypeError("%s has no field %s (fields: %s)"
                            % (type(self).__name__, ", ".join(unknown), ", ".join(self.FIELDS)))
        for name in self.FIELDS:
            setattr(self, name, kwargs.get(name))

    def __eq__(self, other):
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __repr__(self):
        set_fields = ", ".join("%s=%r" % (f, getattr(self, f)) for f in self.FIELDS if getattr(self, f) is not None)
        return "%s(%s)" % (type(self).__name__, set_fields)


def _struct(name, fields):
    return type(name, (_Struct,), {"FIELDS": tuple(fields.split())})


sai_thrift_object_list_t = _struct("sai_thrift_object_list_t", "count object_id_list")
sai_thrift_vlan_list_t = _struct("sai_thrift_vlan_list_t", "vlan_count vlan_list")
sai_thrift_ip_t = _struct("sai_thrift_ip_t", "ip4 ip6")
sai_thrift_ip_address_t = _struct("sai_thrift_ip_address_t", "addr_family addr")
sai_thrift_ip_prefix_t = _struct("sai_thrift_ip_prefix_t", "addr_family addr mask")
sai_thrift_acl_mask_t = _struct("sai_thrift_acl_mask_t", "u8 s8 u16 s16 u32 s32 mac ip4 ip6")
sai_thrift_acl_data_t = _struct("sai_thrift_acl_data_t", "u8 s8 u16 s16 u32 s32 mac ip4 ip6 oid objlist")
sai_thrift_acl_field_data_t = _struct("sai_thrift_acl_field_data_t", "enable mask data")
sai_thrift_attribute_value_t = _struct(
    "sai_thrift_attribute_value_t",
    "booldata chardata u8 s8 u16 s16 u32 s32 u64 s64 mac oid ipaddr ipprefix objlist u8list s8list u16list "
    "s16list u32list s32list vlanlist aclfield aclaction",
)
sai_thrift_attribute_t = _struct("sai_thrift_attribute_t", "id value")
sai_thrift_attribute_list_t = _struct("sai_thrift_attribute_list_t", "attr_list attr_count")
sai_thrift_fdb_entry_t = _struct("sai_thrift_fdb_entry_t", "mac_address vlan_id")
sai_thrift_neighbor_entry_t = _struct("sai_thrift_neighbor_entry_t", "rif_id ip_address")
sai_thrift_unicast_route_entry_t = _struct("sai_thrift_unicast_route_entry_t", "vr_id destination")
